#include "interpose/op.h"

#include "interpose/comm/comm_state.h"
#include "interpose/comm/user_group.h"
#include "interpose/nccl_api.h"
#include "scheduler/chunk_planner.h"

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
  sched::ReduceKind kind = sched::ReduceKind::kOther;
  if (op.redop == ncclMax || op.redop == ncclMin) kind = sched::ReduceKind::kMinMax;
  if (op.redop == ncclSum) kind = sched::ReduceKind::kSum;
  if (op.redop == ncclProd) kind = sched::ReduceKind::kProd;
  if (op.redop == ncclAvg) kind = sched::ReduceKind::kAvg;
  bool integer = false;
  switch (op.datatype) {
    case ncclInt8:
    case ncclUint8:
    case ncclInt32:
    case ncclUint32:
    case ncclInt64:
    case ncclUint64:
      integer = true;
      break;
    default:
      break;
  }
  const int nranks = op.state != nullptr ? op.state->nranks : 0;
  return sched::SplitKeepsEveryBit(op.func, kind, integer, nranks);
}

}  // namespace trirace::interpose
