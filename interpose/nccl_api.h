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

namespace trirace::interpose {
// Its size, for messages ("lacks 3 of the 40 functions").
#define TRIRACE_NCCL_API_COUNT_ONE(name) +1
inline constexpr int kNcclApiFunctionCount = 0 TRIRACE_NCCL_API(TRIRACE_NCCL_API_COUNT_ONE);
#undef TRIRACE_NCCL_API_COUNT_ONE
}  // namespace trirace::interpose

// The communication calls of that list, the ones that become Ops
// (interpose/op.h), each once: its nccl.h signature, how the wrapper fills
// the Op (sendbuff, recvbuff, count, datatype, redop, peer or root; comm and
// stream are the call's), and how an Op calls the real function. The
// wrappers (wrappers_ops.cc) and CallReal (op.cc) are made from it.
//
//   X(Name, (signature), (Op fields), (real call from Op `o`))
#define TRIRACE_NCCL_OP_API(X)                                                                              \
  X(Reduce,                                                                                                 \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, \
     ncclComm_t comm, cudaStream_t stream),                                                                 \
    (sendbuff, recvbuff, count, datatype, op, root),                                                        \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.redop, o.peer_or_root, o.comm, o.stream))               \
  X(Bcast, (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), \
    (buff, buff, count, datatype, ncclSum, root),                                                           \
    (o.recvbuff, o.count, o.datatype, o.peer_or_root, o.comm, o.stream))                                    \
  X(Broadcast,                                                                                              \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                  \
    (sendbuff, recvbuff, count, datatype, ncclSum, root),                                                   \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.peer_or_root, o.comm, o.stream))                        \
  X(AllReduce,                                                                                              \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,           \
     ncclComm_t comm, cudaStream_t stream),                                                                 \
    (sendbuff, recvbuff, count, datatype, op, -1),                                                          \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.redop, o.comm, o.stream))                               \
  X(ReduceScatter,                                                                                          \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,       \
     ncclComm_t comm, cudaStream_t stream),                                                                 \
    (sendbuff, recvbuff, recvcount, datatype, op, -1),                                                      \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.redop, o.comm, o.stream))                               \
  X(AllGather,                                                                                              \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,      \
     cudaStream_t stream),                                                                                  \
    (sendbuff, recvbuff, sendcount, datatype, ncclSum, -1),                                                 \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.comm, o.stream))                                        \
  X(AlltoAll,                                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,          \
     cudaStream_t stream),                                                                                  \
    (sendbuff, recvbuff, count, datatype, ncclSum, -1),                                                     \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.comm, o.stream))                                        \
  X(Gather,                                                                                                 \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                  \
    (sendbuff, recvbuff, count, datatype, ncclSum, root),                                                   \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.peer_or_root, o.comm, o.stream))                        \
  X(Scatter,                                                                                                \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                  \
    (sendbuff, recvbuff, count, datatype, ncclSum, root),                                                   \
    (o.sendbuff, o.recvbuff, o.count, o.datatype, o.peer_or_root, o.comm, o.stream))                        \
  X(Send,                                                                                                   \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,                \
     cudaStream_t stream),                                                                                  \
    (sendbuff, nullptr, count, datatype, ncclSum, peer),                                                    \
    (o.sendbuff, o.count, o.datatype, o.peer_or_root, o.comm, o.stream))                                    \
  X(Recv,                                                                                                   \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), \
    (nullptr, recvbuff, count, datatype, ncclSum, peer),                                                    \
    (o.recvbuff, o.count, o.datatype, o.peer_or_root, o.comm, o.stream))

// Removes one pair of parentheses: TRIRACE_NCCL_UNPAREN (a, b) is a, b.
#define TRIRACE_NCCL_UNPAREN(...) __VA_ARGS__

#endif  // TRIRACE_INTERPOSE_NCCL_API_H_
