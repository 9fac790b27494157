// fifo: releases every held task at once, in submission order.
//
// The baseline that measures what gating alone costs: a task waits only for
// the engine to see it, never for the policy.
//
// Thread safety: see policy.h.
#ifndef TRIRACE_SCHEDULER_FIFO_POLICY_H_
#define TRIRACE_SCHEDULER_FIFO_POLICY_H_

#include "scheduler/policy.h"

namespace trirace::sched {

class FifoPolicy final : public Policy {
 public:
  std::string_view name() const override { return "fifo"; }
  void Decide(const SchedulerView& view, Decision* out) override;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_FIFO_POLICY_H_
