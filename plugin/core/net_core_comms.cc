// NetCore's comms: listen, connect and accept behind checked handles,
// memory registration, close, and the class-priority marks of a comm.
#include <algorithm>
#include <memory>

#include "common/logging.h"
#include "plugin/core/core_objects.h"
#include "plugin/core/net_core.h"

namespace trirace::net {

absl::StatusOr<void*> NetCore::AddComm(std::unique_ptr<Comm> comm) {
  {
    absl::MutexLock lock(&mu_);
    comm->max_recvs = std::max(1, props_[comm->dev]->max_recvs);
  }
  uint64_t handle = comms_.Insert(comm.get());
  if (handle == 0) return absl::ResourceExhaustedError("too many open comms (65536)");
  comm->handle = handle;
  comm->ctx->refs.fetch_add(1);
  open_comms_.fetch_add(1);
  comm.release();
  return reinterpret_cast<void*>(handle);
}

absl::StatusOr<NetCore::Comm*> NetCore::LookupComm(void* handle, Kind kind, const char* call) {
  Comm* comm = comms_.Lookup(reinterpret_cast<uint64_t>(handle));
  if (comm == nullptr || comm->kind != kind) {
    static constexpr const char* kNames[] = {"listen", "send", "receive"};
    return InvalidCall(call, absl::StrCat("comm ", absl::Hex(reinterpret_cast<uintptr_t>(handle)),
                                      " is not an open ", kNames[static_cast<int>(kind)],
                                      " comm of this plugin (closed, or never returned by it)"));
  }
  return comm;
}

absl::Status NetCore::Listen(void* ctx, int dev, void* handle, void** listen_comm) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (handle == nullptr || listen_comm == nullptr) return InvalidCall("listen", "handle or listenComm is NULL");
  *listen_comm = nullptr;
  TRIRACE_RETURN_IF_ERROR(CheckDev(dev, "listen"));
  auto c = LookupContext(ctx, "listen");
  if (!c.ok()) return c.status();
  auto comm = std::make_unique<Comm>();
  comm->kind = Kind::kListen;
  comm->dev = dev;
  comm->ctx = *c;
  TRIRACE_RETURN_IF_ERROR(transport_->Listen((*c)->inner, dev, handle, &comm->inner));
  void* inner = comm->inner;
  auto h = AddComm(std::move(comm));
  if (!h.ok()) {
    (void)transport_->CloseListen(inner);
    return h.status();
  }
  *listen_comm = *h;
  return absl::OkStatus();
}

absl::Status NetCore::Connect(void* ctx, int dev, const ncclNetCommConfig_v11_t* config, void* handle,
                              void** send_comm, ncclNetDeviceHandle_v11_t** send_dev_comm) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (handle == nullptr || send_comm == nullptr) return InvalidCall("connect", "handle or sendComm is NULL");
  *send_comm = nullptr;
  TRIRACE_RETURN_IF_ERROR(CheckDev(dev, "connect"));
  auto c = LookupContext(ctx, "connect");
  if (!c.ok()) return c.status();
  CommConfig cfg = (*c)->config;
  if (config != nullptr && config->trafficClass != NCCL_NET_TRAFFIC_CLASS_UNDEF) {
    if (config->trafficClass < 0 || config->trafficClass > 255) {
      TRIRACE_WARN(NET, "connect: trafficClass=%d ignored (accepted: -1 or 0..255)", config->trafficClass);
    } else {
      cfg.traffic_class = config->trafficClass;
    }
  }
  void* inner = nullptr;
  TRIRACE_RETURN_IF_ERROR(transport_->Connect((*c)->inner, dev, cfg, handle, &inner, send_dev_comm));
  if (inner == nullptr) return absl::OkStatus();  // not yet: NCCL calls again
  auto comm = std::make_unique<Comm>();
  comm->kind = Kind::kSend;
  comm->dev = dev;
  comm->ctx = *c;
  comm->inner = inner;
  comm->explicit_traffic_class = cfg.traffic_class != NCCL_NET_TRAFFIC_CLASS_UNDEF;
  auto h = AddComm(std::move(comm));
  if (!h.ok()) {
    (void)transport_->CloseSend(inner);
    return h.status();
  }
  *send_comm = *h;
  return absl::OkStatus();
}

absl::Status NetCore::Accept(void* listen_comm, void** recv_comm,
                             ncclNetDeviceHandle_v11_t** recv_dev_comm) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (recv_comm == nullptr) return InvalidCall("accept", "recvComm is NULL");
  *recv_comm = nullptr;
  auto lc = LookupComm(listen_comm, Kind::kListen, "accept");
  if (!lc.ok()) return lc.status();
  void* inner = nullptr;
  TRIRACE_RETURN_IF_ERROR(transport_->Accept((*lc)->inner, &inner, recv_dev_comm));
  if (inner == nullptr) return absl::OkStatus();
  auto comm = std::make_unique<Comm>();
  comm->kind = Kind::kRecv;
  comm->dev = (*lc)->dev;
  comm->ctx = (*lc)->ctx;
  comm->inner = inner;
  comm->explicit_traffic_class = comm->ctx->config.traffic_class != NCCL_NET_TRAFFIC_CLASS_UNDEF;
  // What a receive comm sends is TCP's acknowledgements: tiny, and the
  // sender's pace. They go in the first band whatever they acknowledge,
  // rather than wait in a lower one behind the reverse direction's data.
  if (class_priority_ && !comm->explicit_traffic_class) ApplyClassPriority(*comm, TrafficClass::kP2P);
  auto h = AddComm(std::move(comm));
  if (!h.ok()) {
    (void)transport_->CloseRecv(inner);
    return h.status();
  }
  *recv_comm = *h;
  return absl::OkStatus();
}

absl::Status NetCore::RegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (mhandle == nullptr) return InvalidCall("regMr", "mhandle is NULL");
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return InvalidCall("regMr", "comm is not an open send or receive comm");
  return transport_->RegMr(c->inner, data, size, type, mhandle);
}

absl::Status NetCore::RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                  int fd, void** mhandle) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (mhandle == nullptr) return InvalidCall("regMrDmaBuf", "mhandle is NULL");
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return InvalidCall("regMrDmaBuf", "comm is not an open send or receive comm");
  return transport_->RegMrDmaBuf(c->inner, data, size, type, offset, fd, mhandle);
}

absl::Status NetCore::DeregMr(void* comm, void* mhandle) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return InvalidCall("deregMr", "comm is not an open send or receive comm");
  return transport_->DeregMr(c->inner, mhandle);
}

void NetCore::ApplyClassPriority(Comm& comm, TrafficClass cls) {
  // Asked only for DENSE (receive comms come here with P2P's class).
  const bool ahead = cls == TrafficClass::kDense && DenseAheadOfHost();
  const std::optional<ClassMarks> marks = MarksForClass(cls, ahead);
  if (!marks || marks == comm.class_marks) return;
  absl::Status st = comm.kind == Kind::kSend
                        ? transport_->SetSendClass(comm.inner, marks->tos, marks->priority)
                        : transport_->SetRecvClass(comm.inner, marks->tos, marks->priority);
  if (!st.ok()) {
    // Not worth failing a transfer over: the bytes still move, only unordered.
    TRIRACE_WARN_ONCE(NET, "class priority: could not mark a comm with TOS %d / priority %d: %s",
                      marks->tos, marks->priority, st.ToString());
  }
  comm.class_marks = marks;  // tried once per change either way
}

absl::Status NetCore::CloseComm(void* handle, Kind kind, const char* call) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  auto c = LookupComm(handle, kind, call);
  if (!c.ok()) return c.status();
  Comm* comm = comms_.Remove(reinterpret_cast<uint64_t>(handle));
  if (comm == nullptr) return LookupComm(handle, kind, call).status();
  for (Request& r : comm->reqs) {
    if (r.busy.load() && !r.flush) {
      publisher_.Abandoned(comm->dev, ClassIndex(r.cls), kind == Kind::kSend, r.posted);
    }
  }
  absl::Status st = kind == Kind::kSend   ? transport_->CloseSend(comm->inner)
                    : kind == Kind::kRecv ? transport_->CloseRecv(comm->inner)
                                          : transport_->CloseListen(comm->inner);
  Context* ctx = comm->ctx;
  delete comm;
  open_comms_.fetch_sub(1);
  if (ctx->refs.fetch_sub(1) == 1) {
    absl::MutexLock lock(&mu_);
    contexts_.erase(std::find_if(contexts_.begin(), contexts_.end(),
                                 [&](const auto& p) { return p.get() == ctx; }));
  }
  return st;
}

absl::Status NetCore::CloseSend(void* send_comm) { return CloseComm(send_comm, Kind::kSend, "closeSend"); }
absl::Status NetCore::CloseRecv(void* recv_comm) { return CloseComm(recv_comm, Kind::kRecv, "closeRecv"); }
absl::Status NetCore::CloseListen(void* listen_comm) {
  return CloseComm(listen_comm, Kind::kListen, "closeListen");
}

absl::Status NetCore::GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (dptr_mhandle == nullptr) return InvalidCall("getDeviceMr", "dptr_mhandle is NULL");
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return InvalidCall("getDeviceMr", "comm is not an open send or receive comm");
  return transport_->GetDeviceMr(c->inner, mhandle, dptr_mhandle);
}

}  // namespace trirace::net
