// StreamWatcher: runs a host function once a stream has run the work queued
// on it so far, without holding that stream.
//
// A host function queued on the caller's stream (cudaLaunchHostFunc) stops
// the stream until a driver thread has run it: every op the shim tracks
// that way waits a host wake-up before the caller's next kernel (tens of
// microseconds on a GPU; on hostccl the device clock jumps to the real time
// the function returned). The watcher instead records an event on the
// caller's stream, and a stream of its own waits for that event and runs
// the function. The caller's stream only records the event.
//
// Order: watches given one `order` key share a watcher stream, so their
// functions run in the order they were queued. The shim passes the comm:
// NCCL runs a comm's ops in issue order whatever their streams, so that
// order is their completion order and a later op's function never runs
// before an earlier op's. Without a key (nullptr), the stream watched is
// the key.
//
//   StreamWatcher watcher(dev);            // dev outlives the watcher
//   real ncclSend(..., user_stream);
//   watcher.Watch(user_stream, comm_state, &Done, ticket);   // Done(ticket) later
//
// A watcher stream and its event (a WatchQueue) are made on first use per
// (key, device) and kept for the watcher's life (each Watch records the
// event anew, so a stream handle the application destroys and makes again
// is no problem), except a comm's, which Forget() drops when the comm is
// destroyed. A comm caches its queue (CommState::watch_queue), so
// watching a comm's op takes only that queue's lock, not the watcher's.
// Do not watch a stream under graph capture: the event record would become
// a node of the graph. On CUDA the watcher streams are made in the device's
// primary context (as the dedicated streams are); a stream of another
// context cannot be watched (Watch fails, and the caller falls back).
//
// Thread safety: Watch may be called from any thread; two threads watching
// in one queue at once are serialised (the event's record and wait stay a
// pair). The functions run on the device's driver threads.
#ifndef TRIRACE_INTERPOSE_STREAM_WATCHER_H_
#define TRIRACE_INTERPOSE_STREAM_WATCHER_H_

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "interpose/device/device.h"

namespace trirace::interpose {

struct CommState;

// One order key's watcher stream and event. Opaque outside the watcher.
struct WatchQueue {
  absl::Mutex mu;               // keeps one Watch's record, wait and function together
  device::StreamHandle stream = nullptr;
  device::EventHandle event = nullptr;
};

class StreamWatcher {
 public:
  explicit StreamWatcher(device::Device& dev) : dev_(dev) {}
  // Destroys the watcher's streams and events; functions still queued run
  // or not as the backend's stream destruction decides, so callers drain
  // first when that matters (tests).
  ~StreamWatcher();
  StreamWatcher(const StreamWatcher&) = delete;
  StreamWatcher& operator=(const StreamWatcher&) = delete;

  // Runs fn(arg) on a driver thread once `stream` has run everything queued
  // on it before this call, and after the functions queued before with the
  // same `order` key (nullptr: `stream`). `device` is the ordinal `stream`
  // belongs to (the watcher stream and event are made there), or -1 for the
  // calling thread's current device. On error nothing was queued: fn will
  // not run.
  absl::Status Watch(device::StreamHandle stream, const void* order, int device, device::HostFn fn, void* arg);
  // The same, in `comm`'s order on its device, through the queue cached in
  // `comm` (made on first use). A comm is watched through one watcher for
  // its whole life (the cache would point into another watcher's queues).
  // comm == nullptr (an op of a comm the shim does not know): in
  // `stream`'s own order on the current device.
  absl::Status Watch(device::StreamHandle stream, CommState* comm, device::HostFn fn, void* arg);

  // Drops `comm`'s queue (the comm was destroyed: nothing is watched in its
  // order any more). Never waits: destroying a stream or event does not
  // block on either backend, and the functions already queued still run.
  // The caller guarantees no Watch on `comm` runs or follows (NCCL forbids
  // using a comm during or after its destruction).
  void Forget(CommState* comm) ABSL_LOCKS_EXCLUDED(mu_);

  // How many watcher streams exist (one per key and device).
  size_t watcher_streams() const;

 private:
  absl::StatusOr<WatchQueue*> For(const void* key, int device);
  absl::Status Queue(WatchQueue& q, device::StreamHandle stream, device::HostFn fn, void* arg);

  device::Device& dev_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::pair<const void*, int>, std::unique_ptr<WatchQueue>> watched_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_STREAM_WATCHER_H_
