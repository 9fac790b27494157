#include "interpose/stream_watcher.h"

#include "interpose/comm/comm_state.h"

namespace trirace::interpose {

StreamWatcher::~StreamWatcher() {
  absl::MutexLock lock(&mu_);
  for (auto& [key, w] : watched_) {
    if (w->event != nullptr) dev_.DestroyEvent(w->event).IgnoreError();
    if (w->stream != nullptr) dev_.DestroyStream(w->stream).IgnoreError();
  }
}

absl::StatusOr<WatchQueue*> StreamWatcher::For(const void* key, int device) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<WatchQueue>& slot = watched_[{key, device}];
  if (slot != nullptr) return slot.get();
  // Made in the watched streams' device: an event is recorded on streams of
  // its own device.
  absl::StatusOr<device::CurrentDevice> current =
      device >= 0 ? dev_.MakeCurrent(device) : absl::StatusOr<device::CurrentDevice>(device::CurrentDevice());
  auto w = std::make_unique<WatchQueue>();
  absl::Status status = current.status();
  if (status.ok()) {
    absl::StatusOr<device::StreamHandle> s = dev_.CreateStream();
    status = s.status();
    if (s.ok()) w->stream = *s;
  }
  if (status.ok()) {
    absl::StatusOr<device::EventHandle> e = dev_.CreateEvent();
    status = e.status();
    if (e.ok()) w->event = *e;
  }
  if (!status.ok()) {
    if (w->stream != nullptr) dev_.DestroyStream(w->stream).IgnoreError();
    watched_.erase({key, device});
    return status;
  }
  slot = std::move(w);
  return slot.get();
}

absl::Status StreamWatcher::Queue(WatchQueue& q, device::StreamHandle stream, device::HostFn fn, void* arg) {
  absl::MutexLock lock(&q.mu);
  if (absl::Status s = dev_.RecordEvent(q.event, stream); !s.ok()) return s;
  if (absl::Status s = dev_.StreamWaitEvent(q.stream, q.event); !s.ok()) return s;
  return dev_.LaunchHostFunc(q.stream, fn, arg);
}

absl::Status StreamWatcher::Watch(device::StreamHandle stream, const void* order, int device, device::HostFn fn,
                                  void* arg) {
  absl::StatusOr<WatchQueue*> q = For(order != nullptr ? order : stream, device);
  if (!q.ok()) return q.status();
  return Queue(**q, stream, fn, arg);
}

absl::Status StreamWatcher::Watch(device::StreamHandle stream, CommState* comm, device::HostFn fn, void* arg) {
  if (comm == nullptr) return Watch(stream, nullptr, -1, fn, arg);
  WatchQueue* q = comm->watch_queue.load(std::memory_order_acquire);
  if (q == nullptr) {
    absl::StatusOr<WatchQueue*> made = For(comm, comm->device);
    if (!made.ok()) return made.status();
    q = *made;
    // Racing first watches find one queue (For is per key): they store the same pointer.
    comm->watch_queue.store(q, std::memory_order_release);
  }
  return Queue(*q, stream, fn, arg);
}

void StreamWatcher::Forget(CommState* comm) {
  comm->watch_queue.store(nullptr, std::memory_order_release);
  std::unique_ptr<WatchQueue> q;
  {
    absl::MutexLock lock(&mu_);
    auto it = watched_.find(std::make_pair(static_cast<const void*>(comm), comm->device));
    if (it == watched_.end()) return;
    q = std::move(it->second);
    watched_.erase(it);
  }
  { absl::MutexLock queueing(&q->mu); }  // a Watch still between its record and its function is done
  absl::StatusOr<device::CurrentDevice> current =
      comm->device >= 0 ? dev_.MakeCurrent(comm->device) : absl::StatusOr<device::CurrentDevice>(device::CurrentDevice());
  if (q->event != nullptr) dev_.DestroyEvent(q->event).IgnoreError();
  if (q->stream != nullptr) dev_.DestroyStream(q->stream).IgnoreError();
}

size_t StreamWatcher::watcher_streams() const {
  absl::MutexLock lock(&mu_);
  return watched_.size();
}

}  // namespace trirace::interpose
