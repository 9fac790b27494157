// TraceBuffer: a bounded, lock-free multi-producer queue of TraceRecords.
//
// Producers (application threads, stream callback threads) Push() without
// locks or allocation; the trace writer is the single consumer. When the
// buffer is full Push() fails and the record is counted as dropped: the
// writer reports the count in the file and in a WARN, so nothing is lost
// silently. Capacity is fixed at construction (TRIRACE_TRACE_BUFFER_MB).
//
// Every buffer alive is listed process-wide, so ProcessTraceBufferTotals()
// can say what tracing holds without a pointer to the writer: the shim's
// summary prints it (interpose/trace/summary.h) when the last comm is destroyed
// and at exit, which is how a long job (bench/soak) sees the buffer stay
// bounded and its drops counted while it runs.
//
// Thread safety: Push() from any number of threads; Pop() from one thread;
// ProcessTraceBufferTotals() from any thread.
#ifndef TRIRACE_INTERPOSE_TRACE_TRACE_BUFFER_H_
#define TRIRACE_INTERPOSE_TRACE_TRACE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "interpose/trace/trace_record.h"

namespace trirace::interpose {

class TraceBuffer {
 public:
  // A buffer using at most `max_bytes` of memory (at least 16 records).
  static absl::StatusOr<std::unique_ptr<TraceBuffer>> Create(size_t max_bytes);
  ~TraceBuffer();
  TraceBuffer(const TraceBuffer&) = delete;
  TraceBuffer& operator=(const TraceBuffer&) = delete;

  // False (and the record counted as dropped) when the buffer is full.
  bool Push(const TraceRecord& record);
  // The oldest record, if any. Single consumer.
  bool Pop(TraceRecord* out);

  size_t capacity() const { return mask_ + 1; }
  // Records waiting to be popped (approximate while producers run).
  size_t size() const;
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t pushed() const { return pushed_.load(std::memory_order_relaxed); }
  // The most records waiting at once, as the consumer saw them at its pops
  // (a buffer that filled up reports its capacity).
  uint64_t high_water() const { return high_water_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> sequence;
    TraceRecord record;
  };
  TraceBuffer(std::unique_ptr<Slot[]> slots, size_t n);

  std::unique_ptr<Slot[]> slots_;
  size_t mask_;
  alignas(64) std::atomic<uint64_t> tail_{0};  // next slot to fill
  alignas(64) std::atomic<uint64_t> head_{0};  // next slot to read
  alignas(64) std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> pushed_{0};
  std::atomic<uint64_t> high_water_{0};  // written by the consumer only
};

// The sum over every TraceBuffer alive in this process (the shim has one,
// its trace writer's; none when TRIRACE_TRACE is unset).
struct TraceBufferTotals {
  int buffers = 0;          // buffers alive
  uint64_t capacity = 0;    // records they can hold
  uint64_t pushed = 0;      // records accepted
  uint64_t dropped = 0;     // records refused because a buffer was full
  uint64_t waiting = 0;     // accepted, not yet popped by the writer
  uint64_t high_water = 0;  // the largest high_water() of them
};
TraceBufferTotals ProcessTraceBufferTotals();

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_TRACE_TRACE_BUFFER_H_
