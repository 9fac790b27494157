#include "hostccl/src/host_stream.h"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace trirace::hostccl {

std::optional<ClockMark::Clock::time_point> ClockMark::End() const {
  absl::MutexLock lock(&mu_);
  return end_;
}

void ClockMark::Set(Clock::time_point end) {
  absl::MutexLock lock(&mu_);
  end_ = end;
}

uint64_t HostStream::Enqueue(Task task) {
  absl::MutexLock lock(&mu_);
  if (closed_) return 0;
  queue_.push_back(std::move(task));
  ++enqueued_;
  if (!worker_started_) StartWorkerLocked();
  return enqueued_;
}

uint64_t HostStream::EnqueueClocked(ClockedTask task) {
  return Enqueue([this, enqueued = Clock::now(), task = std::move(task)]() mutable {
    const Clock::time_point start = std::max(enqueued, last_end_);
    std::optional<Clock::time_point> end = std::move(task)(start);
    if (end.has_value()) clock_end_ = std::max(*end, start);
  });
}

uint64_t HostStream::EnqueueKernelFunc(Task task) {
  return EnqueueClocked([task = std::move(task)](Clock::time_point start) mutable -> std::optional<Clock::time_point> {
    std::move(task)();
    return start;
  });
}

uint64_t HostStream::EnqueueCompute(std::chrono::microseconds duration) {
  // The worker owns a reference to the stream while it runs tasks.
  return Enqueue([this, enqueued = Clock::now(), duration] { RunCompute(enqueued, duration); });
}

void HostStream::RunCompute(Clock::time_point enqueued, std::chrono::microseconds duration) {
  Clock::time_point end = std::max(enqueued, last_end_) + duration;
  // This sleep is the emulated kernel's duration: keep the kernel's timer
  // slack (50 us by default) out of it, but not out of the polling sleeps
  // elsewhere on this thread, which would then wake far more often.
  int slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
  (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  std::this_thread::sleep_until(end);
  if (slack > 0) (void)prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(slack), 0UL, 0UL, 0UL);
  clock_end_ = end;
}

uint64_t HostStream::EnqueueWaitEvent(const HostEvent& event) {
  HostEvent::Point point = event.Recorded();
  // Work on this stream is already in order after its own points.
  if (point.stream == nullptr || point.stream.get() == this) return 0;
  return Enqueue([this, source = std::move(point.stream), mark = std::move(point.mark)] {
    source->WaitReached(mark->ticket());
    // Reached, so the mark is set (or unset for good: ticket 0). The wait
    // takes no device time; the time this thread took to wake is not kept.
    clock_end_ = std::max(last_end_, mark->End().value_or(last_end_));
  });
}

std::shared_ptr<const ClockMark> HostStream::Mark() {
  absl::MutexLock lock(&mu_);
  if (completed_ < enqueued_) {
    if (pending_marks_.empty() || pending_marks_.back()->ticket() != enqueued_) {
      pending_marks_.push_back(std::make_shared<ClockMark>(enqueued_));
    }
    return pending_marks_.back();
  }
  auto mark = std::make_shared<ClockMark>(enqueued_);
  if (reached_end_.has_value()) mark->Set(*reached_end_);
  return mark;
}

uint64_t HostStream::LastTicket() const {
  absl::MutexLock lock(&mu_);
  return enqueued_;
}

bool HostStream::Reached(uint64_t ticket) const {
  absl::MutexLock lock(&mu_);
  return completed_ >= ticket;
}

void HostStream::WaitReached(uint64_t ticket) const {
  absl::MutexLock lock(&mu_);
  auto reached = [this, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return completed_ >= ticket; };
  mu_.Await(absl::Condition(&reached));
}

void HostStream::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

void HostStream::StartWorkerLocked() {
  worker_started_ = true;
  // The worker owns a reference: a destroyed stream still drains its queue
  // and the thread ends by itself (see the header), so it is detached.
  std::thread([self = shared_from_this()] { self->RunWorker(); }).detach();
}

void HostStream::RunWorker() {
  for (;;) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || closed_; };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // closed and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    clock_end_.reset();
    std::move(task)();
    last_end_ = clock_end_.value_or(Clock::now());
    absl::MutexLock lock(&mu_);
    ++completed_;
    reached_end_ = last_end_;
    // Set before the lock is released: whoever sees the ticket reached sees
    // its clock end.
    while (!pending_marks_.empty() && pending_marks_.front()->ticket() <= completed_) {
      pending_marks_.front()->Set(last_end_);
      pending_marks_.pop_front();
    }
  }
}

void HostEvent::Record(std::shared_ptr<HostStream> stream) {
  std::shared_ptr<const ClockMark> mark = stream->Mark();
  absl::MutexLock lock(&mu_);
  point_ = Point{std::move(stream), std::move(mark)};
}

HostEvent::Point HostEvent::Recorded() const {
  absl::MutexLock lock(&mu_);
  return point_;
}

bool HostEvent::Complete() const {
  Point point = Recorded();
  return point.stream == nullptr || point.stream->Reached(point.mark->ticket());
}

void HostEvent::Wait() const {
  Point point = Recorded();
  if (point.stream != nullptr) point.stream->WaitReached(point.mark->ticket());
}

namespace {

template <typename T>
class HandleTable {
 public:
  void* Add(std::shared_ptr<T> object) {
    void* key = object.get();
    absl::MutexLock lock(&mu_);
    table_[key] = std::move(object);
    return key;
  }
  std::shared_ptr<T> Find(void* key) {
    absl::MutexLock lock(&mu_);
    auto it = table_.find(key);
    return it == table_.end() ? nullptr : it->second;
  }
  std::shared_ptr<T> Remove(void* key) {
    absl::MutexLock lock(&mu_);
    auto it = table_.find(key);
    if (it == table_.end()) return nullptr;
    std::shared_ptr<T> object = std::move(it->second);
    table_.erase(it);
    return object;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<void*, std::shared_ptr<T>> table_ ABSL_GUARDED_BY(mu_);
};

// Never destroyed: streams and events may be used from static destructors
// and detached workers of other libraries at exit.
HandleTable<HostStream>& Streams() {
  static auto* table = new HandleTable<HostStream>();
  return *table;
}
HandleTable<HostEvent>& Events() {
  static auto* table = new HandleTable<HostEvent>();
  return *table;
}
const std::shared_ptr<HostStream>& DefaultStream() {
  static auto* stream = new std::shared_ptr<HostStream>(std::make_shared<HostStream>());
  return *stream;
}

absl::Status NotAStream(const void* handle, absl::string_view arg) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s=%p is not a live hostccl stream: create streams with hostcclStreamCreate (or pass NULL "
      "for the default host stream); CUDA streams cannot be used with hostccl",
      arg, handle));
}

}  // namespace

cudaStream_t RegisterStream(std::shared_ptr<HostStream> stream) {
  return static_cast<cudaStream_t>(Streams().Add(std::move(stream)));
}

absl::StatusOr<std::shared_ptr<HostStream>> LookupStream(cudaStream_t handle, absl::string_view arg) {
  if (handle == nullptr) return DefaultStream();
  std::shared_ptr<HostStream> stream = Streams().Find(handle);
  if (stream == nullptr) return NotAStream(handle, arg);
  return stream;
}

absl::StatusOr<std::shared_ptr<HostStream>> UnregisterStream(cudaStream_t handle) {
  if (handle == nullptr) {
    return absl::InvalidArgumentError("stream=NULL: the default host stream cannot be destroyed");
  }
  std::shared_ptr<HostStream> stream = Streams().Remove(handle);
  if (stream == nullptr) return NotAStream(handle, "stream");
  return stream;
}

cudaEvent_t RegisterEvent(std::shared_ptr<HostEvent> event) {
  return static_cast<cudaEvent_t>(Events().Add(std::move(event)));
}

absl::StatusOr<std::shared_ptr<HostEvent>> LookupEvent(cudaEvent_t handle, absl::string_view arg) {
  std::shared_ptr<HostEvent> event = handle == nullptr ? nullptr : Events().Find(handle);
  if (event == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%p is not a live hostccl event: create events with hostcclEventCreate", arg, handle));
  }
  return event;
}

absl::StatusOr<std::shared_ptr<HostEvent>> UnregisterEvent(cudaEvent_t handle) {
  std::shared_ptr<HostEvent> event = handle == nullptr ? nullptr : Events().Remove(handle);
  if (event == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "event=%p is not a live hostccl event: create events with hostcclEventCreate", handle));
  }
  return event;
}

void EnqueueWaitValue32(HostStream& stream, const volatile uint32_t* word, uint32_t value) {
  stream.Enqueue([word, value] {
    // The opener only stores to the word, so poll: spin a little for a fast
    // hand-off, then sleep with a back-off capped at 100 us, and at 1 ms once
    // the gate has been closed for 100 ms (many idle gated streams must not
    // burn the CPU).
    auto open = [&] {
      uint32_t now = __atomic_load_n(const_cast<const uint32_t*>(word), __ATOMIC_ACQUIRE);
      return static_cast<int32_t>(now - value) >= 0;
    };
    for (int i = 0; i < 200; ++i) {
      if (open()) return;
      std::this_thread::yield();
    }
    const auto start = std::chrono::steady_clock::now();
    auto pause = std::chrono::microseconds(1);
    while (!open()) {
      std::this_thread::sleep_for(pause);
      bool long_wait = std::chrono::steady_clock::now() - start > std::chrono::milliseconds(100);
      pause = std::min(pause * 2, std::chrono::microseconds(long_wait ? 1000 : 100));
    }
  });
}

}  // namespace trirace::hostccl
