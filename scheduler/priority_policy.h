// priority: a ByteScheduler-style baseline.
//
// Class-blind: P2P, SPARSE and DENSE are treated alike. Held tasks are
// ordered by priority and released while the bytes in flight (all running
// tasks, every class, every link) stay within one global credit window:
//
//   order   tag priority, larger first (unset counts as lowest); then layer,
//           front (0) first (unset last); then submission order.
//   window  a task is released while inflight + task bytes <= the
//           window, or when nothing is in flight (so a task larger than
//           the window still runs). The first task that does not fit stops
//           the pass: strict order. The window is window_ns
//           (TRIRACE_PRIORITY_WINDOW_US) of wire time at the slowest
//           capacity among the links the task crosses, so that the baseline
//           is sized for the link as trirace's limits are (ByteScheduler
//           tuned its credit per setup); window_bytes
//           (TRIRACE_PRIORITY_WINDOW_BYTES), when non-zero, replaces it.
//
// Only the head of each communicator is a candidate (per-comm order is
// fixed; see policy.h). Tasks held past the engine's bound are released by
// the engine.
//
// Thread safety: see policy.h.
#ifndef TRIRACE_SCHEDULER_PRIORITY_POLICY_H_
#define TRIRACE_SCHEDULER_PRIORITY_POLICY_H_

#include <cstdint>
#include <vector>

#include "scheduler/policy.h"

namespace trirace::sched {

struct PriorityPolicyConfig {
  int64_t window_ns = 7'000'000;
  uint64_t window_bytes = 0;  // non-zero: this many bytes instead of window_ns
  static constexpr uint64_t kFallbackWindowBytes = 16ull << 20;  // no link of known capacity
  // From TRIRACE_PRIORITY_WINDOW_US and TRIRACE_PRIORITY_WINDOW_BYTES.
  static PriorityPolicyConfig FromParams();
  // The window for a task whose slowest link has `bytes_per_s` (0 = unknown).
  uint64_t WindowBytes(double bytes_per_s) const;
};

class PriorityPolicy final : public Policy {
 public:
  explicit PriorityPolicy(PriorityPolicyConfig config = {}) : config_(config) {}
  std::string_view name() const override { return "priority"; }
  void Decide(const SchedulerView& view, Decision* out) override;

 private:
  PriorityPolicyConfig config_;
  std::vector<const Task*> candidates_;  // reused between passes
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_PRIORITY_POLICY_H_
