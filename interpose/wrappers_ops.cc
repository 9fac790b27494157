// The ncclX definitions of the communication calls: collectives,
// point-to-point and groups. Each builds an Op and hands it to the shim's
// launcher (observe path), or forwards (off, re-entry, failure).
#include "interpose/forward.h"

using trirace::interpose::Forward;
using trirace::NcclFunc;
using trirace::interpose::Has;
using trirace::interpose::MakeOp;
using trirace::interpose::Op;
using trirace::interpose::RealNccl;
using trirace::interpose::Shim;

extern "C" {

TRIRACE_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Reduce)) {
    return Forward(shim, &RealNccl::Reduce, "ncclReduce", sendbuff, recvbuff, count, datatype, op, root, comm,
                   stream);
  }
  Op o = MakeOp(NcclFunc::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Bcast)) {
    return Forward(shim, &RealNccl::Bcast, "ncclBcast", buff, count, datatype, root, comm, stream);
  }
  Op o = MakeOp(NcclFunc::kBcast, buff, buff, count, datatype, ncclSum, root, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Broadcast)) {
    return Forward(shim, &RealNccl::Broadcast, "ncclBroadcast", sendbuff, recvbuff, count, datatype, root, comm,
                   stream);
  }
  Op o = MakeOp(NcclFunc::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::AllReduce)) {
    return Forward(shim, &RealNccl::AllReduce, "ncclAllReduce", sendbuff, recvbuff, count, datatype, op, comm,
                   stream);
  }
  Op o = MakeOp(NcclFunc::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                              cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::ReduceScatter)) {
    return Forward(shim, &RealNccl::ReduceScatter, "ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op,
                   comm, stream);
  }
  Op o = MakeOp(NcclFunc::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::AllGather)) {
    return Forward(shim, &RealNccl::AllGather, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, comm,
                   stream);
  }
  Op o = MakeOp(NcclFunc::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::AlltoAll)) {
    return Forward(shim, &RealNccl::AlltoAll, "ncclAlltoAll", sendbuff, recvbuff, count, datatype, comm, stream);
  }
  Op o = MakeOp(NcclFunc::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, -1, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Gather)) {
    return Forward(shim, &RealNccl::Gather, "ncclGather", sendbuff, recvbuff, count, datatype, root, comm, stream);
  }
  Op o = MakeOp(NcclFunc::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Scatter)) {
    return Forward(shim, &RealNccl::Scatter, "ncclScatter", sendbuff, recvbuff, count, datatype, root, comm, stream);
  }
  Op o = MakeOp(NcclFunc::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Send)) {
    return Forward(shim, &RealNccl::Send, "ncclSend", sendbuff, count, datatype, peer, comm, stream);
  }
  Op o = MakeOp(NcclFunc::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Recv)) {
    return Forward(shim, &RealNccl::Recv, "ncclRecv", recvbuff, count, datatype, peer, comm, stream);
  }
  Op o = MakeOp(NcclFunc::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
  return shim.IssueOp(o);
}

TRIRACE_EXPORT ncclResult_t ncclGroupStart() {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::GroupStart)) {
    return Forward(shim, &RealNccl::GroupStart, "ncclGroupStart");
  }
  return shim.GroupStart();
}

TRIRACE_EXPORT ncclResult_t ncclGroupEnd() {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::GroupEnd)) {
    return Forward(shim, &RealNccl::GroupEnd, "ncclGroupEnd");
  }
  return shim.GroupEnd();
}

TRIRACE_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::GroupSimulateEnd)) {
    return Forward(shim, &RealNccl::GroupSimulateEnd, "ncclGroupSimulateEnd", simInfo);
  }
  return shim.GroupSimulateEnd(simInfo);
}

}  // extern "C"
