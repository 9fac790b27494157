// The NCCL 2.28 API surface that libtrirace.so intercepts, as one X-macro
// list: every function declared in the installed nccl.h (its `ncclX` name
// without the prefix). The shim defines each `ncclX` with the signature
// nccl.h declares, resolves the real library's `pncclX` for each, and a test
// checks this list against the header.
//
// Usage:
//   #define F(name) ... nccl##name ...
//   TRIRACE_NCCL_API(F)
#ifndef TRIRACE_INTERPOSE_NCCL_API_H_
#define TRIRACE_INTERPOSE_NCCL_API_H_

#define TRIRACE_NCCL_API(X) \
  X(MemAlloc)               \
  X(MemFree)                \
  X(GetVersion)             \
  X(GetUniqueId)            \
  X(CommInitRankConfig)     \
  X(CommInitRank)           \
  X(CommInitAll)            \
  X(CommFinalize)           \
  X(CommDestroy)            \
  X(CommAbort)              \
  X(CommRevoke)             \
  X(CommSplit)              \
  X(CommShrink)             \
  X(CommInitRankScalable)   \
  X(GetErrorString)         \
  X(GetLastError)           \
  X(CommGetAsyncError)      \
  X(CommCount)              \
  X(CommCuDevice)           \
  X(CommUserRank)           \
  X(CommRegister)           \
  X(CommDeregister)         \
  X(CommWindowRegister)     \
  X(CommWindowDeregister)   \
  X(RedOpCreatePreMulSum)   \
  X(RedOpDestroy)           \
  X(Reduce)                 \
  X(Bcast)                  \
  X(Broadcast)              \
  X(AllReduce)              \
  X(ReduceScatter)          \
  X(AllGather)              \
  X(AlltoAll)               \
  X(Gather)                 \
  X(Scatter)                \
  X(Send)                   \
  X(Recv)                   \
  X(GroupStart)             \
  X(GroupEnd)               \
  X(GroupSimulateEnd)

#endif  // TRIRACE_INTERPOSE_NCCL_API_H_
