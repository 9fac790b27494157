#include "interpose/trace_buffer.h"

#include <new>

#include "absl/strings/str_cat.h"

namespace trirace::interpose {

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

TraceBuffer::TraceBuffer(std::unique_ptr<Slot[]> slots, size_t n) : slots_(std::move(slots)), mask_(n - 1) {}

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

}  // namespace trirace::interpose
