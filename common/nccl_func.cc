#include "common/nccl_func.h"

namespace trirace {

const char* NcclFuncName(NcclFunc f) {
  switch (f) {
    case NcclFunc::kReduce: return "Reduce";
    case NcclFunc::kBcast: return "Bcast";
    case NcclFunc::kBroadcast: return "Broadcast";
    case NcclFunc::kAllReduce: return "AllReduce";
    case NcclFunc::kReduceScatter: return "ReduceScatter";
    case NcclFunc::kAllGather: return "AllGather";
    case NcclFunc::kAlltoAll: return "AlltoAll";
    case NcclFunc::kGather: return "Gather";
    case NcclFunc::kScatter: return "Scatter";
    case NcclFunc::kSend: return "Send";
    case NcclFunc::kRecv: return "Recv";
  }
  return "?";
}

bool HasRoot(NcclFunc f) {
  switch (f) {
    case NcclFunc::kReduce:
    case NcclFunc::kBcast:
    case NcclFunc::kBroadcast:
    case NcclFunc::kGather:
    case NcclFunc::kScatter:
      return true;
    default:
      return false;
  }
}

}  // namespace trirace
