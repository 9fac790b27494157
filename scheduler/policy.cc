#include "scheduler/policy.h"

#include "absl/strings/str_cat.h"
#include "scheduler/adversarial_policy.h"
#include "scheduler/fifo_policy.h"
#include "scheduler/priority_policy.h"
#include "scheduler/trirace_policy.h"

namespace trirace::sched {

bool LinkState::HigherClassActive() const {
  for (TrafficClass c : {TrafficClass::kP2P, TrafficClass::kSparse, TrafficClass::kOther}) {
    if (running[ClassIndex(c)] != 0 || pending[ClassIndex(c)] != 0) return true;
  }
  return false;
}

double LinkState::ForeignFraction() const {
  if (capacity_bytes_per_s <= 0 || occupancy_ns < 0) return 0;
  return foreign_bytes_per_s / capacity_bytes_per_s;
}

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name) {
  if (name == "fifo") return std::make_unique<FifoPolicy>();
  if (name == "priority") return std::make_unique<PriorityPolicy>(PriorityPolicyConfig::FromParams());
  if (name == "trirace") return std::make_unique<TriracePolicy>(TriracePolicyConfig::FromParams());
  if (name == "adversarial") {
    return std::make_unique<AdversarialPolicy>(AdversarialPolicyConfig::FromParams());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "scheduling policy '", absl::string_view(name.data(), name.size()),
      "' is not one of fifo, priority, trirace, adversarial"));
}

}  // namespace trirace::sched
