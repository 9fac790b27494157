#include "interpose/trace/trace_buffer.h"

#include <algorithm>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace trirace::interpose {
namespace {

// The buffers alive, for ProcessTraceBufferTotals(). Never destroyed: a
// buffer may outlive static destruction (the shim closes its trace in an
// atexit hook).
struct LiveBuffers {
  absl::Mutex mutex;
  std::vector<const TraceBuffer*> buffers ABSL_GUARDED_BY(mutex);
};
LiveBuffers& Live() {
  static auto* live = new LiveBuffers();
  return *live;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceBuffer>> TraceBuffer::Create(size_t max_bytes) {
  size_t n = 16;
  while (n * 2 * sizeof(Slot) <= max_bytes) n *= 2;
  std::unique_ptr<Slot[]> slots(new (std::nothrow) Slot[n]);
  if (slots == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate a trace buffer of ", n * sizeof(Slot),
                                                     " bytes (TRIRACE_TRACE_BUFFER_MB)"));
  }
  for (size_t i = 0; i < n; ++i) slots[i].sequence.store(i, std::memory_order_relaxed);
  return std::unique_ptr<TraceBuffer>(new TraceBuffer(std::move(slots), n));
}

TraceBuffer::TraceBuffer(std::unique_ptr<Slot[]> slots, size_t n) : slots_(std::move(slots)), mask_(n - 1) {
  LiveBuffers& live = Live();
  absl::MutexLock lock(&live.mutex);
  live.buffers.push_back(this);
}

TraceBuffer::~TraceBuffer() {
  LiveBuffers& live = Live();
  absl::MutexLock lock(&live.mutex);
  live.buffers.erase(std::remove(live.buffers.begin(), live.buffers.end(), this), live.buffers.end());
}

bool TraceBuffer::Push(const TraceRecord& record) {
  uint64_t pos = tail_.load(std::memory_order_relaxed);
  for (;;) {
    Slot& slot = slots_[pos & mask_];
    const uint64_t seq = slot.sequence.load(std::memory_order_acquire);
    const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (diff == 0) {
      if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        slot.record = record;
        slot.sequence.store(pos + 1, std::memory_order_release);
        pushed_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    } else if (diff < 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);  // full
      return false;
    } else {
      pos = tail_.load(std::memory_order_relaxed);
    }
  }
}

bool TraceBuffer::Pop(TraceRecord* out) {
  const uint64_t pos = head_.load(std::memory_order_relaxed);
  Slot& slot = slots_[pos & mask_];
  const uint64_t seq = slot.sequence.load(std::memory_order_acquire);
  if (static_cast<int64_t>(seq) - static_cast<int64_t>(pos + 1) < 0) return false;  // empty
  // The consumer alone writes high_water_, so a plain compare-and-store is enough.
  const uint64_t waiting = tail_.load(std::memory_order_relaxed) - pos;
  if (waiting > high_water_.load(std::memory_order_relaxed)) high_water_.store(waiting, std::memory_order_relaxed);
  *out = slot.record;
  slot.sequence.store(pos + mask_ + 1, std::memory_order_release);
  head_.store(pos + 1, std::memory_order_relaxed);
  return true;
}

size_t TraceBuffer::size() const {
  const uint64_t t = tail_.load(std::memory_order_relaxed);
  const uint64_t h = head_.load(std::memory_order_relaxed);
  return t > h ? static_cast<size_t>(t - h) : 0;
}

TraceBufferTotals ProcessTraceBufferTotals() {
  TraceBufferTotals t;
  LiveBuffers& live = Live();
  absl::MutexLock lock(&live.mutex);
  for (const TraceBuffer* b : live.buffers) {
    ++t.buffers;
    t.capacity += b->capacity();
    t.pushed += b->pushed();
    t.dropped += b->dropped();
    t.waiting += b->size();
    t.high_water = std::max(t.high_water, b->high_water());
  }
  return t;
}

}  // namespace trirace::interpose
