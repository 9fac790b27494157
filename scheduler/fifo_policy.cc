#include "scheduler/fifo_policy.h"

namespace trirace::sched {

void FifoPolicy::Decide(const SchedulerView& view, Decision* out) {
  for (const Task* t : view.pending) out->releases.push_back({t->id, ReleaseReason::kFifo});
}

}  // namespace trirace::sched
