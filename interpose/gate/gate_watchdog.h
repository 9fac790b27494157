// GateWatchdog: the launcher's own guarantee that every gate opens within
// the hold bound, independent of the scheduler engine.
//
// The engine releases every task at its hold bound on its own; the
// watchdog is the backstop for an engine that is late (its thread starved,
// a pass stuck behind a slow occupancy read). Each gated unit is watched
// with deadline = call time + bound - bound/16, the bound being the engine's
// at the time of the call (it grows with the iteration period: engine.h);
// the thread sleeps until the earliest deadline (wake-ups coalesced to at
// most one per floor/16, the floor being the bound it was made with) and
// opens every gate past its deadline that is still closed, recording
// reason kMaxHold. So a gate is open by the bound even when the engine does
// nothing, and the watchdog preempts the engine by at most 1/16 of the
// bound. With nothing watched the thread blocks without timeout.
//
// It also frees the lanes of destroyed comms (Retire): a retired lane stays
// in the sweep until idle (comm_lane.h: no ticket alive, nothing watched),
// then the thread takes it out and frees it. While any lane is retiring the
// thread looks at least every kRetirePollNs. Freeing here, not in the
// application's ncclCommDestroy, means destroy and abort never wait for the
// comm's work; and not in a completion callback, which may not call the
// device's API (a CUDA host function may not).
//
// Thread safety: Watch(), AddLane(), Retire() and Stop() from any thread.
// mu_ guards the lane lists and the thread's sleep state; a Watch() that
// moves the earliest deadline forward changes sleeping_until_, which the
// sleeping thread's wait condition sees when mu_ is released (no separate
// notify).
#ifndef TRIRACE_INTERPOSE_GATE_GATE_WATCHDOG_H_
#define TRIRACE_INTERPOSE_GATE_GATE_WATCHDOG_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "interpose/gate/comm_lane.h"

namespace trirace::interpose {

class GateWatchdog {
 public:
  // `expired(ticket)` runs on the watchdog thread for a gate it is about to
  // open (the ticket's release fields are unset or set by the engine).
  // `free_lane(lane)` runs on the watchdog thread for each retired lane
  // once idle, and frees it (nullptr: the lane is simply destroyed).
  GateWatchdog(int64_t floor_bound_ns, std::function<void(GateTicket*)> expired,
               std::function<void(std::unique_ptr<CommLane>)> free_lane = nullptr);
  ~GateWatchdog();
  GateWatchdog(const GateWatchdog&) = delete;
  GateWatchdog& operator=(const GateWatchdog&) = delete;

  absl::Status Start();
  // Opens nothing more; joins the thread, then gives up every ticket still
  // watched (its kWatched arrival, so its last other arrival frees it); a
  // Watch() after Stop() arrives at once. The caller opens the gates that
  // are still closed (GatedLauncher::Shutdown: the engine's Stop). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Adds `lane` to the sweep (once per lane, before its first Watch()).
  void AddLane(CommLane* lane) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes over `lane` (added before, its comm destroyed: no new op comes to
  // it) and frees it once idle. After Stop() the lane is kept, not freed.
  void Retire(std::unique_ptr<CommLane> lane) ABSL_LOCKS_EXCLUDED(mu_);
  size_t retiring() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t lanes_freed() const { return lanes_freed_.load(std::memory_order_relaxed); }

  static constexpr int64_t kRetirePollNs = 10'000'000;
  // Watches `ticket` (gated, already on `lane`), called at time `call_ns`,
  // under the hold bound `bound_ns`.
  void Watch(CommLane* lane, GateTicket* ticket, int64_t call_ns, int64_t bound_ns) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t opened() const { return opened_.load(std::memory_order_relaxed); }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Frees the retired lanes that are idle (the thread, between sweeps).
  void FreeIdleLanes() ABSL_LOCKS_EXCLUDED(mu_);

  const int64_t coalesce_ns_;
  std::function<void(GateTicket*)> expired_;
  std::function<void(std::unique_ptr<CommLane>)> free_lane_;

  mutable absl::Mutex mu_;
  std::vector<CommLane*> lanes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<CommLane>> retiring_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> lanes_freed_{0};
  // 0 while sweeping; sched::kNeverNs while blocked without timeout.
  int64_t sleeping_until_ ABSL_GUARDED_BY(mu_) = 0;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;  // watched while awake
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> opened_{0};
  std::thread thread_;
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_GATE_WATCHDOG_H_
