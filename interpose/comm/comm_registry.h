// CommRegistry: ncclComm_t -> CommState, found without a lock.
//
// Lookups (every intercepted op) probe a fixed-capacity open-addressing
// table of atomic slots: no lock, no allocation. Registration and removal
// (comm init, split, destroy: rare) take a mutex among themselves. A
// removed slot becomes a tombstone that a later registration reuses.
// CommStates are never freed before the process exits, so a pointer
// returned by Find() stays valid even if the comm is destroyed meanwhile.
//
// Capacity: `capacity` live comms, rounded up to a power of two (at least
// 8); a registration beyond it fails and that comm stays untracked (its ops are
// still forwarded, just not attributed).
//
// Thread safety: all methods are thread-safe.
#ifndef TRIRACE_INTERPOSE_COMM_COMM_REGISTRY_H_
#define TRIRACE_INTERPOSE_COMM_COMM_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "interpose/comm/comm_state.h"
#include "nccl.h"

namespace trirace::interpose {

class CommRegistry {
 public:
  explicit CommRegistry(size_t capacity = 4096);
  CommRegistry(const CommRegistry&) = delete;
  CommRegistry& operator=(const CommRegistry&) = delete;

  // Takes ownership of `state` (state->comm must be set) and makes it
  // findable; assigns state->index. A comm already registered is replaced
  // (the old state is retired). Fails when the table is full.
  absl::StatusOr<CommState*> Register(std::unique_ptr<CommState> state);

  // The live state of `comm`, or nullptr. Lock-free.
  CommState* Find(ncclComm_t comm) const;

  // Makes `comm` unfindable and marks its state not live; returns it (or
  // nullptr if it was not registered).
  CommState* Remove(ncclComm_t comm);

  // Live comms right now.
  size_t live() const { return live_.load(std::memory_order_relaxed); }
  // The rank of the first comm registered in this process, or -1.
  int first_rank() const { return first_rank_.load(std::memory_order_relaxed); }

  // Calls `fn` for every state ever registered, in registration order,
  // under the registration lock (fn must not call back into the registry).
  void ForEach(const std::function<void(CommState&)>& fn) const;

 private:
  struct Slot {
    std::atomic<ncclComm_t> key{nullptr};
    std::atomic<CommState*> value{nullptr};
  };
  size_t Home(ncclComm_t comm) const;

  std::unique_ptr<Slot[]> slots_;
  size_t mask_;
  std::atomic<size_t> live_{0};
  std::atomic<int> first_rank_{-1};
  mutable absl::Mutex mutex_;  // writers and ForEach
  std::vector<std::unique_ptr<CommState>> all_ ABSL_GUARDED_BY(mutex_);  // every state ever registered
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMM_COMM_REGISTRY_H_
