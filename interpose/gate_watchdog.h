// GateWatchdog: the launcher's own guarantee that every gate opens within
// the hold bound, independent of the scheduler engine.
//
// The engine releases every task at TRIRACE_MAX_HOLD_US on its own; the
// watchdog is the backstop for an engine that is late (its thread starved,
// a pass stuck behind a slow occupancy read). Each gated unit is watched
// with deadline = call time + bound - bound/16; the thread sleeps until the
// earliest deadline (wake-ups coalesced to at most one per bound/16) and
// opens every gate past its deadline that is still closed, recording
// reason kMaxHold. So a gate is open by the bound even when the engine does
// nothing, and the watchdog preempts the engine by at most 1/16 of the
// bound. With nothing watched the thread blocks without timeout.
//
// Thread safety: Watch() and Stop() from any thread.
#ifndef TRIRACE_INTERPOSE_GATE_WATCHDOG_H_
#define TRIRACE_INTERPOSE_GATE_WATCHDOG_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "interpose/comm_lane.h"

namespace trirace::interpose {

class GateWatchdog {
 public:
  // `expired(ticket)` runs on the watchdog thread for a gate it is about to
  // open (the ticket's release fields are unset or set by the engine).
  GateWatchdog(int64_t bound_ns, std::function<void(GateTicket*)> expired);
  ~GateWatchdog();
  GateWatchdog(const GateWatchdog&) = delete;
  GateWatchdog& operator=(const GateWatchdog&) = delete;

  absl::Status Start();
  // Opens nothing more; joins the thread. Idempotent.
  void Stop();

  // Adds `lane` to the sweep (once per lane, before its first Watch()).
  void AddLane(CommLane* lane);
  // Watches `ticket` (gated, already on `lane`), called at time `call_ns`.
  void Watch(CommLane* lane, GateTicket* ticket, int64_t call_ns);

  uint64_t opened() const { return opened_.load(std::memory_order_relaxed); }

 private:
  void Run();

  const int64_t lead_ns_;     // deadline = call + lead
  const int64_t coalesce_ns_;
  std::function<void(GateTicket*)> expired_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CommLane*> lanes_;
  int64_t sleeping_until_ = 0;  // sched::kNeverNs while blocked without timeout
  bool dirty_ = false;          // watched while awake
  bool stop_ = false;
  std::atomic<uint64_t> opened_{0};
  std::thread thread_;
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_WATCHDOG_H_
