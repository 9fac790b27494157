// adversarial: a test policy that releases held tasks in random order after
// random delays, all within a bound.
//
// Each task gets, when the policy first sees it, a delay drawn uniformly
// from [0, max_delay_ns]; it is released on the first pass at or after
// enqueue + delay, and the releases of one pass are shuffled. Per-comm
// heads are ignored on purpose: it releases later tasks of a comm before
// earlier ones. The invariant tests run the whole stack under it to show
// that no release order or timing breaks results, per-comm order or
// progress. Deterministic for a given seed and sequence of views.
//
// Thread safety: see policy.h.
#ifndef TRIRACE_SCHEDULER_ADVERSARIAL_POLICY_H_
#define TRIRACE_SCHEDULER_ADVERSARIAL_POLICY_H_

#include <cstdint>
#include <random>
#include <unordered_map>

#include "scheduler/policy.h"

namespace trirace::sched {

struct AdversarialPolicyConfig {
  uint64_t seed = 1;
  int64_t max_delay_ns = 1'000'000;
  // From TRIRACE_ADVERSARIAL_SEED; the delay bound is 90% of
  // TRIRACE_MAX_HOLD_US so the policy, not the engine bound, releases.
  static AdversarialPolicyConfig FromParams();
};

class AdversarialPolicy final : public Policy {
 public:
  explicit AdversarialPolicy(AdversarialPolicyConfig config = {});
  std::string_view name() const override { return "adversarial"; }
  void Decide(const SchedulerView& view, Decision* out) override;
  void OnTaskDone(TaskId id) override { release_at_.erase(id); }

 private:
  AdversarialPolicyConfig config_;
  std::mt19937_64 rng_;
  std::unordered_map<TaskId, int64_t> release_at_;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_ADVERSARIAL_POLICY_H_
