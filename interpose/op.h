// Op: one intercepted NCCL communication call, as the launcher sees it.
//
// Each wrapper of a collective or point-to-point function (ncclAllReduce,
// ncclSend, ...) builds an Op holding every argument of the call plus what
// the shim adds (the comm's registry entry, the calling thread's tag, the
// group id, the per-comm sequence number) and hands it to the Launcher
// (launcher.h). CallReal() re-issues an Op through the real library, which
// is how a launcher runs it: unchanged in observe mode, or on another stream
// or as chunks (a copy with other buffers/count) in schedule mode.
//
// Thread safety: an Op is a value owned by the calling thread.
#ifndef TRIRACE_INTERPOSE_OP_H_
#define TRIRACE_INTERPOSE_OP_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "common/nccl_func.h"
#include "interpose/real_nccl.h"
#include "nccl_adapter/nccl_types.h"
#include "nccl.h"
#include "trirace/trirace.h"

namespace trirace::interpose {

struct CommState;
class UserGroup;

struct Op {
  NcclFunc func = NcclFunc::kAllReduce;
  // The call's arguments. Unused ones keep these defaults: Bcast passes its
  // buffer as both sendbuff and recvbuff; Send has no recvbuff, Recv no
  // sendbuff; redop is meaningful for Reduce/AllReduce/ReduceScatter.
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;
  int peer_or_root = -1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;

  // Added by the shim before the launcher sees the Op.
  size_t bytes = 0;                      // count x element size
  CommState* state = nullptr;            // nullptr: comm unknown to the registry
  trirace_tag_t tag = TRIRACE_TAG_INIT;  // innermost tag of the calling thread
  UserGroup* group = nullptr;            // the thread's open group; nullptr outside one
  uint64_t seq = 0;                      // issue order on its comm, from 0
  int64_t call_ns = 0;                   // MonotonicNs() when the call arrived

  // The id of the group the op belongs to; 0 outside ncclGroupStart/End.
  uint64_t group_id() const;
};

// Issues `op` through the real library with exactly the arguments it holds.
// Returns ncclInvalidUsage if the real library lacks the function.
ncclResult_t CallReal(const RealNccl& real, const Op& op);
// True when `real` has the function of `func`.
bool HasReal(const RealNccl& real, NcclFunc func);

// True when issuing `op` as chunks (the same call on consecutive
// sub-ranges) gives bit for bit the result of one call: a Broadcast (data
// only); a reduction whose result does not depend on the order in which
// ranks' values combine: min or max of any type, a sum, product or average
// of integers (wrapping integer arithmetic is associative), or a sum,
// product or average of any type on a comm of two ranks (each element is
// then one addition or multiplication of two values, which commute in IEEE
// arithmetic: a + b and b + a round to the same bits, NaN payloads aside).
// A floating-point sum, product or average over three or more ranks, or a
// user op (PreMulSum), is not: the collective's algorithm adds the ranks'
// values in an order that depends on where an element sits in the buffer,
// and a chunk moves every boundary, so the result changes by rounding (as
// it does when NCCL picks another algorithm). Such ops are split only with
// TRIRACE_CHUNK_FLOAT_REDUCTIONS=on. The rank count comes from op.state;
// an op without one counts as three or more ranks. The rule itself is
// sched::SplitKeepsEveryBit (scheduler/chunk_planner.h), which the
// simulator uses too.
bool SplitIsExact(const Op& op);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_OP_H_
