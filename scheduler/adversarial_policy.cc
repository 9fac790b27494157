#include "scheduler/adversarial_policy.h"

#include <algorithm>

#include "common/params.h"

namespace trirace::sched {

AdversarialPolicyConfig AdversarialPolicyConfig::FromParams() {
  AdversarialPolicyConfig c;
  c.seed = static_cast<uint64_t>(ParamInt(ParamId::kAdversarialSeed));
  c.max_delay_ns = ParamInt(ParamId::kMaxHoldUs) * 1000 * 9 / 10;
  return c;
}

AdversarialPolicy::AdversarialPolicy(AdversarialPolicyConfig config)
    : config_(config), rng_(config.seed) {}

void AdversarialPolicy::Decide(const SchedulerView& view, Decision* out) {
  const size_t first = out->releases.size();
  std::uniform_int_distribution<int64_t> delay(0, std::max<int64_t>(config_.max_delay_ns, 0));
  for (const Task* t : view.pending) {
    auto [it, inserted] = release_at_.try_emplace(t->id, 0);
    if (inserted) it->second = t->enqueue_ns + delay(rng_);
    if (it->second <= view.now_ns) {
      out->releases.push_back({t->id, ReleaseReason::kRandom});
    } else {
      out->WakeAt(it->second);
    }
  }
  std::shuffle(out->releases.begin() + static_cast<std::ptrdiff_t>(first), out->releases.end(), rng_);
}

}  // namespace trirace::sched
