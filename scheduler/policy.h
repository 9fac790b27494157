// The policy interface: given what the engine knows now, which held tasks to
// release.
//
// The engine calls Decide() whenever something changed (a task was
// submitted or completed, an occupancy sample arrived, a timer the policy
// asked for expired). The policy sees a read-only SchedulerView and appends
// releases, each with a reason, to a Decision; it also says when it next
// wants to be asked if nothing else happens (next_wake_ns), e.g. when a hold
// or a deadline runs out. A policy never touches devices or NCCL; it is
// plain computation, so it is unit-tested with a fake clock by building
// views by hand (see tests/scheduler/).
//
// Whatever a policy does, the engine independently releases every task that
// has been held for EngineOptions::max_hold_ns (TRIRACE_MAX_HOLD_US), so a
// buggy or adversarial policy can delay but never block a gate forever.
//
// Per-comm order: tasks of one communicator run on one stream in submission
// order, so releasing a later task of a comm before its head (Task::comm_head)
// gains nothing; window-keeping policies consider heads only. When a pass
// released anything the engine asks again at once, so the next task of each
// comm is considered in the same round.
//
// Thread safety: the engine calls Decide() with its state lock held, from
// one thread at a time. Policies need no locking of their own.
#ifndef TRIRACE_SCHEDULER_POLICY_H_
#define TRIRACE_SCHEDULER_POLICY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/task.h"

namespace trirace::sched {

// Per-class counters (indexed by ClassIndex()).
using ClassBytes = std::array<uint64_t, kNumTrafficClasses>;
using ClassCounts = std::array<uint32_t, kNumTrafficClasses>;

// One link as the policy sees it.
struct LinkState {
  LinkId id = 0;
  std::string name;
  double capacity_bytes_per_s = 0;  // 0 = unknown
  ClassBytes inflight_bytes{};      // bytes of running tasks, by class
  ClassCounts running{};            // running tasks, by class
  ClassCounts pending{};            // held tasks, by class
  // Measured traffic on the link that is not ours (other jobs, other
  // processes' untracked traffic), bytes/s; valid only if occupancy_ns >= 0.
  double foreign_bytes_per_s = 0;
  // All traffic measured on the link, bytes/s (ours included).
  double measured_bytes_per_s = 0;
  int64_t occupancy_ns = -1;  // engine time of the sample; -1 = none yet
  // At that sample: bytes other processes of the job on this host had in
  // flight on the link's device as P2P or SPARSE sends (the net plugin's
  // per-process class gauges); -1 = the source cannot tell.
  int64_t foreign_urgent_bytes = -1;
  // The online tuner's factors on the DENSE window and credit
  // (window_tuner.h); 1 when tuning is off.
  double window_scale = 1;
  double credit_scale = 1;

  // True when P2P, SPARSE or OTHER traffic is running or held on the link:
  // the classes DENSE must yield to.
  bool HigherClassActive() const;
  // foreign / capacity, 0 when either is unknown.
  double ForeignFraction() const;
};

// Where the training loop is, from trirace_iteration_begin() calls.
struct IterationInfo {
  int64_t current = kUnsetTag;  // iteration in progress, kUnsetTag if never told
  int64_t start_ns = -1;        // when it began
  int64_t period_ns = 0;        // smoothed iteration length; 0 = unknown
};

// A read-only snapshot of the engine, valid only during Decide().
struct SchedulerView {
  int64_t now_ns = 0;
  // Held tasks in submission order.
  std::span<const Task* const> pending;
  // Released (or ungated) tasks not yet complete, in release order.
  std::span<const Task* const> running;
  // Indexed by LinkId.
  std::span<const LinkState> links;
  ClassBytes inflight_bytes{};  // over all running tasks
  IterationInfo iteration;
  // The engine's hold bound (TRIRACE_MAX_HOLD_US); policies may release at it.
  int64_t max_hold_ns = 0;

  // The link, or nullptr for an id outside the table.
  const LinkState* Link(LinkId id) const { return id < links.size() ? &links[id] : nullptr; }
};

struct Release {
  TaskId id = 0;
  ReleaseReason reason = ReleaseReason::kFifo;
};

struct Decision {
  std::vector<Release> releases;
  // Ask again at this engine time even if nothing changes; kNeverNs = no.
  int64_t next_wake_ns = kNeverNs;

  void Clear() {
    releases.clear();
    next_wake_ns = kNeverNs;
  }
  void WakeAt(int64_t t) {
    if (t < next_wake_ns) next_wake_ns = t;
  }
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  // Appends to `out` (cleared by the caller). Releasing an id that is not
  // pending is ignored by the engine.
  virtual void Decide(const SchedulerView& view, Decision* out) = 0;
  // The engine forgot `id` (completed); drop any per-task state.
  virtual void OnTaskDone(TaskId /*id*/) {}
};

// `ns` of wire time at `bytes_per_s`, in bytes; `fallback` when the rate is
// unknown (0). The policies size their limits in time with it.
uint64_t WireBytes(int64_t ns, double bytes_per_s, uint64_t fallback);

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_POLICY_H_
