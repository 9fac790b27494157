#include "interpose/op.h"

namespace trirace::interpose {

absl::string_view FuncName(Func func) {
  switch (func) {
    case Func::kReduce: return "Reduce";
    case Func::kBcast: return "Bcast";
    case Func::kBroadcast: return "Broadcast";
    case Func::kAllReduce: return "AllReduce";
    case Func::kReduceScatter: return "ReduceScatter";
    case Func::kAllGather: return "AllGather";
    case Func::kAlltoAll: return "AlltoAll";
    case Func::kGather: return "Gather";
    case Func::kScatter: return "Scatter";
    case Func::kSend: return "Send";
    case Func::kRecv: return "Recv";
  }
  return "?";
}

bool HasRoot(Func func) {
  switch (func) {
    case Func::kReduce:
    case Func::kBcast:
    case Func::kBroadcast:
    case Func::kGather:
    case Func::kScatter:
      return true;
    default:
      return false;
  }
}

ncclResult_t CallReal(const RealNccl& real, const Op& op) {
  switch (op.func) {
    case Func::kReduce:
      if (real.Reduce == nullptr) break;
      return real.Reduce(op.sendbuff, op.recvbuff, op.count, op.datatype, op.redop, op.peer_or_root, op.comm,
                         op.stream);
    case Func::kBcast:
      if (real.Bcast == nullptr) break;
      return real.Bcast(op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case Func::kBroadcast:
      if (real.Broadcast == nullptr) break;
      return real.Broadcast(op.sendbuff, op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case Func::kAllReduce:
      if (real.AllReduce == nullptr) break;
      return real.AllReduce(op.sendbuff, op.recvbuff, op.count, op.datatype, op.redop, op.comm, op.stream);
    case Func::kReduceScatter:
      if (real.ReduceScatter == nullptr) break;
      return real.ReduceScatter(op.sendbuff, op.recvbuff, op.count, op.datatype, op.redop, op.comm, op.stream);
    case Func::kAllGather:
      if (real.AllGather == nullptr) break;
      return real.AllGather(op.sendbuff, op.recvbuff, op.count, op.datatype, op.comm, op.stream);
    case Func::kAlltoAll:
      if (real.AlltoAll == nullptr) break;
      return real.AlltoAll(op.sendbuff, op.recvbuff, op.count, op.datatype, op.comm, op.stream);
    case Func::kGather:
      if (real.Gather == nullptr) break;
      return real.Gather(op.sendbuff, op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case Func::kScatter:
      if (real.Scatter == nullptr) break;
      return real.Scatter(op.sendbuff, op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case Func::kSend:
      if (real.Send == nullptr) break;
      return real.Send(op.sendbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
    case Func::kRecv:
      if (real.Recv == nullptr) break;
      return real.Recv(op.recvbuff, op.count, op.datatype, op.peer_or_root, op.comm, op.stream);
  }
  return ncclInvalidUsage;
}

}  // namespace trirace::interpose
