#include "interpose/op.h"

namespace trirace::interpose {

ncclResult_t CallReal(const RealNccl& real, const Op& op) {
  switch (op.func) {
    case NcclFunc::kReduce:
      if (real.Reduce == nullptr) break;
      return real.Reduce(op.sendbuff, op.recvbuff, op.count, op.datatype, op.redop, op.peer_or_root, op.comm,
                         op.stream);
    case NcclFunc::kBcast:
      if (real.Bcast == nullptr) break;
      return real.Bcast(op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case NcclFunc::kBroadcast:
      if (real.Broadcast == nullptr) break;
      return real.Broadcast(op.sendbuff, op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case NcclFunc::kAllReduce:
      if (real.AllReduce == nullptr) break;
      return real.AllReduce(op.sendbuff, op.recvbuff, op.count, op.datatype, op.redop, op.comm, op.stream);
    case NcclFunc::kReduceScatter:
      if (real.ReduceScatter == nullptr) break;
      return real.ReduceScatter(op.sendbuff, op.recvbuff, op.count, op.datatype, op.redop, op.comm, op.stream);
    case NcclFunc::kAllGather:
      if (real.AllGather == nullptr) break;
      return real.AllGather(op.sendbuff, op.recvbuff, op.count, op.datatype, op.comm, op.stream);
    case NcclFunc::kAlltoAll:
      if (real.AlltoAll == nullptr) break;
      return real.AlltoAll(op.sendbuff, op.recvbuff, op.count, op.datatype, op.comm, op.stream);
    case NcclFunc::kGather:
      if (real.Gather == nullptr) break;
      return real.Gather(op.sendbuff, op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case NcclFunc::kScatter:
      if (real.Scatter == nullptr) break;
      return real.Scatter(op.sendbuff, op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case NcclFunc::kSend:
      if (real.Send == nullptr) break;
      return real.Send(op.sendbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case NcclFunc::kRecv:
      if (real.Recv == nullptr) break;
      return real.Recv(op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
  }
  return ncclInvalidUsage;
}

}  // namespace trirace::interpose
