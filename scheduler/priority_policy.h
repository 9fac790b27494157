// priority: a ByteScheduler-style baseline.
//
// Class-blind: P2P, SPARSE and DENSE are treated alike. Held tasks are
// ordered by priority and released while the bytes in flight (all running
// tasks, every class, every link) stay within one global credit window:
//
//   order   tag priority, larger first (unset counts as lowest); then layer,
//           front (0) first (unset last); then submission order.
//   window  a task is released while inflight + task bytes <=
//           window_bytes (TRIRACE_PRIORITY_WINDOW_BYTES), or when nothing
//           is in flight (so a task larger than the window still runs).
//           The first task that does not fit stops the pass: strict order.
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
  uint64_t window_bytes = 16ull << 20;
  // From TRIRACE_PRIORITY_WINDOW_BYTES.
  static PriorityPolicyConfig FromParams();
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
