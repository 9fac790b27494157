#include "scheduler/task.h"

namespace trirace::sched {

std::string_view ReleaseReasonName(ReleaseReason r) {
  switch (r) {
    case ReleaseReason::kUngated: return "ungated";
    case ReleaseReason::kFifo: return "fifo";
    case ReleaseReason::kPriority: return "priority";
    case ReleaseReason::kP2P: return "p2p";
    case ReleaseReason::kOtherClass: return "other-class";
    case ReleaseReason::kSparse: return "sparse";
    case ReleaseReason::kDenseGap: return "dense-gap";
    case ReleaseReason::kDenseCredit: return "dense-credit";
    case ReleaseReason::kDeadline: return "deadline";
    case ReleaseReason::kMaxHold: return "max-hold";
    case ReleaseReason::kRandom: return "random";
    case ReleaseReason::kShutdown: return "shutdown";
    case ReleaseReason::kRefused: return "refused";
  }
  return "?";
}

}  // namespace trirace::sched
