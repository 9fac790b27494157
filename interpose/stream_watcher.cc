#include "interpose/stream_watcher.h"

namespace trirace::interpose {

StreamWatcher::~StreamWatcher() {
  absl::MutexLock lock(&mu_);
  for (auto& [key, w] : watched_) {
    if (w->event != nullptr) dev_.DestroyEvent(w->event).IgnoreError();
    if (w->stream != nullptr) dev_.DestroyStream(w->stream).IgnoreError();
  }
}

absl::StatusOr<StreamWatcher::Watched*> StreamWatcher::For(const void* key, int device) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Watched>& slot = watched_[{key, device}];
  if (slot != nullptr) return slot.get();
  // Made in the watched streams' device: an event is recorded on streams of
  // its own device.
  absl::StatusOr<device::CurrentDevice> current =
      device >= 0 ? dev_.MakeCurrent(device) : absl::StatusOr<device::CurrentDevice>(device::CurrentDevice());
  auto w = std::make_unique<Watched>();
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

absl::Status StreamWatcher::Watch(device::StreamHandle stream, const void* order, int device, device::HostFn fn,
                                  void* arg) {
  absl::StatusOr<Watched*> w = For(order != nullptr ? order : stream, device);
  if (!w.ok()) return w.status();
  absl::MutexLock lock(&(*w)->mu);
  if (absl::Status s = dev_.RecordEvent((*w)->event, stream); !s.ok()) return s;
  if (absl::Status s = dev_.StreamWaitEvent((*w)->stream, (*w)->event); !s.ok()) return s;
  return dev_.LaunchHostFunc((*w)->stream, fn, arg);
}

size_t StreamWatcher::watcher_streams() const {
  absl::MutexLock lock(&mu_);
  return watched_.size();
}

}  // namespace trirace::interpose
