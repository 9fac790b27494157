#include "scheduler/policy_factory.h"

#include "scheduler/adversarial_policy.h"
#include "scheduler/fifo_policy.h"
#include "scheduler/priority_policy.h"
#include "scheduler/trirace_policy.h"

namespace trirace::sched {

std::unique_ptr<Policy> MakePolicy(PolicyKind kind, const PolicyOverrides& overrides) {
  switch (kind) {
    case PolicyKind::kFifo: return std::make_unique<FifoPolicy>();
    case PolicyKind::kPriority: return std::make_unique<PriorityPolicy>(PriorityPolicyConfig::FromParams());
    case PolicyKind::kAdversarial:
      return std::make_unique<AdversarialPolicy>(AdversarialPolicyConfig::FromParams());
    case PolicyKind::kTrirace: break;
  }
  TriracePolicyConfig config = TriracePolicyConfig::FromParams();
  if (overrides.wire_class_priority) config.wire_class_priority = *overrides.wire_class_priority;
  return std::make_unique<TriracePolicy>(config);
}

EngineOptions EngineOptionsFor(PolicyKind kind, EngineOptions options) {
  if (kind != PolicyKind::kTrirace) options.tuning.enabled = false;
  return options;
}

}  // namespace trirace::sched
