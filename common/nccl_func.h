// The NCCL communication functions, one definition for every module: the
// shim's ops (interpose/op.h), the chunk planner (scheduler/chunk_planner.h),
// hostccl's operations and the transfer hint hostccl passes to a net plugin.
// Needs no NCCL header: the values are ours, in the order of nccl.h's API.
//
// kBcast is ncclBcast, the in-place form of ncclBroadcast; modules that do
// not need to tell the two entry points apart treat it as kBroadcast.
//
// Thread safety: constants and pure functions.
#ifndef TRIRACE_COMMON_NCCL_FUNC_H_
#define TRIRACE_COMMON_NCCL_FUNC_H_

#include <cstdint>

namespace trirace {

enum class NcclFunc : uint8_t {
  kReduce,
  kBcast,
  kBroadcast,
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
};
inline constexpr int kNumNcclFuncs = 11;

// "AllReduce", "Send", ... (the API name without the "nccl" prefix).
const char* NcclFuncName(NcclFunc f);

// Send and Recv.
inline constexpr bool IsPointToPoint(NcclFunc f) { return f == NcclFunc::kSend || f == NcclFunc::kRecv; }

// Reduce, Bcast, Broadcast, Gather, Scatter: the call names a root (Send
// and Recv name a peer; the others neither).
bool HasRoot(NcclFunc f);

}  // namespace trirace

#endif  // TRIRACE_COMMON_NCCL_FUNC_H_
