// TraceBuffer: a bounded, lock-free multi-producer queue of TraceRecords.
//
// Producers (application threads, stream callback threads) Push() without
// locks or allocation; the trace writer is the single consumer. When the
// buffer is full Push() fails and the record is counted as dropped: the
// writer reports the count in the file and in a WARN, so nothing is lost
// silently. Capacity is fixed at construction (TRIRACE_TRACE_BUFFER_MB).
//
// Thread safety: Push() from any number of threads; Pop() from one thread.
#ifndef TRIRACE_INTERPOSE_TRACE_BUFFER_H_
#define TRIRACE_INTERPOSE_TRACE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "interpose/trace_record.h"

namespace trirace::interpose {

class TraceBuffer {
 public:
  // A buffer using at most `max_bytes` of memory (at least 16 records).
  static absl::StatusOr<std::unique_ptr<TraceBuffer>> Create(size_t max_bytes);

  // False (and the record counted as dropped) when the buffer is full.
  bool Push(const TraceRecord& record);
  // The oldest record, if any. Single consumer.
  bool Pop(TraceRecord* out);

  size_t capacity() const { return mask_ + 1; }
  // Records waiting to be popped (approximate while producers run).
  size_t size() const;
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t pushed() const { return pushed_.load(std::memory_order_relaxed); }

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
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_TRACE_BUFFER_H_
