#include "interpose/trace/trace_record.h"

namespace trirace::interpose {

absl::string_view CommCallName(CommCall call) {
  switch (call) {
    case CommCall::kInitRank: return "CommInitRank";
    case CommCall::kInitRankConfig: return "CommInitRankConfig";
    case CommCall::kInitAll: return "CommInitAll";
    case CommCall::kInitRankScalable: return "CommInitRankScalable";
    case CommCall::kSplit: return "CommSplit";
    case CommCall::kShrink: return "CommShrink";
    case CommCall::kFinalize: return "CommFinalize";
    case CommCall::kDestroy: return "CommDestroy";
    case CommCall::kAbort: return "CommAbort";
    case CommCall::kRevoke: return "CommRevoke";
  }
  return "?";
}

}  // namespace trirace::interpose
