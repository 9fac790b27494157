// Helpers the ncclX wrappers share: forwarding to the real function and
// building Ops. Internal to libtrirace.so.
#ifndef TRIRACE_INTERPOSE_FORWARD_H_
#define TRIRACE_INTERPOSE_FORWARD_H_

#include "common/export.h"
#include "interpose/op.h"
#include "interpose/real_nccl.h"
#include "interpose/shim.h"
#include "nccl.h"

namespace trirace::interpose {

// Calls the real function `field` with `args`, or returns the shim's error
// for a missing one. This is the whole of mode off.
template <typename Fn, typename... Args>
inline ncclResult_t Forward(Shim& shim, Fn RealNccl::*field, const char* name, Args... args) {
  const RealNccl* real = shim.real();
  if (real == nullptr || real->*field == nullptr) [[unlikely]] {
    return shim.Unavailable(name);
  }
  return (real->*field)(args...);
}

// Forward() of a call on `comm`, unless the shim refuses that comm
// (Shim::CheckComm: only while it records, so never in mode off nor on
// re-entry from the real library).
template <typename Fn, typename... Args>
inline ncclResult_t ForwardOnComm(Shim& shim, Fn RealNccl::*field, const char* name, ncclComm_t comm,
                                  Args... args) {
  if (shim.ShouldRecord()) {
    if (const ncclResult_t refused = shim.CheckComm(comm, name, /*group_call=*/false); refused != ncclSuccess) {
      return refused;
    }
  }
  return Forward(shim, field, name, args...);
}

// True when the real library provides `field` (checked before IssueOp so a
// missing function is reported, not recorded).
template <typename Fn>
inline bool Has(const Shim& shim, Fn RealNccl::*field) {
  return shim.real() != nullptr && shim.real()->*field != nullptr;
}

// Mode off for a communication call: the Op through the real library, or
// the shim's error when the real library lacks the function.
inline ncclResult_t ForwardOp(Shim& shim, const Op& op, const char* name) {
  const RealNccl* real = shim.real();
  if (real == nullptr || !HasReal(*real, op.func)) [[unlikely]] {
    return shim.Unavailable(name);
  }
  return CallReal(*real, op);
}

inline Op MakeOp(NcclFunc func, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 ncclRedOp_t redop, int peer_or_root, ncclComm_t comm, cudaStream_t stream) {
  Op op;
  op.func = func;
  op.sendbuff = sendbuff;
  op.recvbuff = recvbuff;
  op.count = count;
  op.datatype = datatype;
  op.redop = redop;
  op.peer_or_root = peer_or_root;
  op.comm = comm;
  op.stream = stream;
  return op;
}

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_FORWARD_H_
