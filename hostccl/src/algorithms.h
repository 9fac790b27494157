// The NCCL operations as data-mover plans (data_mover.h).
//
//   AllReduce       ring: reduce-scatter then all-gather, 2(n-1) steps,
//                   streamed slice by slice (busbw-optimal like NCCL's ring)
//   ReduceScatter   ring reduce-scatter, n-1 steps
//   AllGather       ring all-gather, n-1 steps
//   Broadcast       pipelined chain root -> root+1 -> ... (ring order)
//   Reduce          pipelined chain root+1 -> ... -> root
//   AlltoAll, Gather, Scatter, Send/Recv
//                   direct point-to-point transfers (RunP2p); an in-place
//                   AlltoAll goes through the staging area in rounds
//
// Reduction order is fixed by nranks, count and the slice size, so results
// are deterministic and AllReduce results are identical on every rank.
// Buffers follow NCCL: in place when sendbuff == recvbuff (AllGather: when
// sendbuff == recvbuff + rank*count; ReduceScatter: when recvbuff ==
// sendbuff + rank*count).
#ifndef TRIRACE_HOSTCCL_SRC_ALGORITHMS_H_
#define TRIRACE_HOSTCCL_SRC_ALGORITHMS_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "common/nccl_func.h"
#include "hostccl/src/data_mover.h"
#include "hostccl/src/reduce.h"
#include "nccl.h"

namespace trirace::hostccl {


// One operation as enqueued (arguments already checked).
struct OpDesc {
  NcclFunc func = NcclFunc::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // per rank for AllGather/ReduceScatter/AlltoAll/Gather/Scatter
  ncclDataType_t type = ncclFloat32;
  Reduction reduction;
  int root = 0;  // root, or the peer of Send/Recv
  // PreMulSum with ncclScalarDevice: the scalar is read when the op runs.
  const void* device_scalar = nullptr;
};

// Runs one collective (not Send/Recv) on `nranks` ranks.
absl::Status RunCollective(const OpDesc& op, int nranks, MoverEnv& env);

// The transfer of one Send or Recv (to be run with the others of its group).
P2pTransfer TransferOf(const OpDesc& op);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_ALGORITHMS_H_
