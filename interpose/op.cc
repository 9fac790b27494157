#include "interpose/op.h"

#include "interpose/comm_state.h"
#include "interpose/nccl_api.h"
#include "interpose/user_group.h"

namespace trirace::interpose {

uint64_t Op::group_id() const { return group != nullptr ? group->id() : 0; }

// Both from TRIRACE_NCCL_OP_API: one case per communication call.
bool HasReal(const RealNccl& real, NcclFunc func) {
  switch (func) {
#define TRIRACE_HAS_REAL_CASE(Name, params, fields, real_call) \
  case NcclFunc::k##Name:                                      \
    return real.Name != nullptr;
    TRIRACE_NCCL_OP_API(TRIRACE_HAS_REAL_CASE)
#undef TRIRACE_HAS_REAL_CASE
  }
  return false;
}

ncclResult_t CallReal(const RealNccl& real, const Op& o) {
  switch (o.func) {
#define TRIRACE_CALL_REAL_CASE(Name, params, fields, real_call)                 \
  case NcclFunc::k##Name:                                                       \
    if (real.Name == nullptr) break;                                            \
    return real.Name(TRIRACE_NCCL_UNPAREN real_call);
    TRIRACE_NCCL_OP_API(TRIRACE_CALL_REAL_CASE)
#undef TRIRACE_CALL_REAL_CASE
  }
  return ncclInvalidUsage;
}

bool SplitIsExact(const Op& op) {
  switch (op.func) {
    case NcclFunc::kBroadcast:
    case NcclFunc::kBcast:
      return true;
    case NcclFunc::kAllReduce:
    case NcclFunc::kReduce:
    case NcclFunc::kReduceScatter:
      break;
    default:
      return false;
  }
  if (op.redop == ncclMax || op.redop == ncclMin) return true;
  if (op.redop != ncclSum && op.redop != ncclProd && op.redop != ncclAvg) return false;  // PreMulSum, user ops
  // Two ranks: every element is one operation on two values, and IEEE
  // addition and multiplication commute, so no order exists to change.
  if (op.state != nullptr && op.state->nranks == 2) return true;
  switch (op.datatype) {
    case ncclInt8:
    case ncclUint8:
    case ncclInt32:
    case ncclUint32:
    case ncclInt64:
    case ncclUint64:
      return true;
    default:
      return false;
  }
}

}  // namespace trirace::interpose
