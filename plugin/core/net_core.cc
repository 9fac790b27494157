#include "plugin/core/net_core.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/params.h"
#include "common/status.h"
#include "plugin/core/nccl_log_sink.h"
#include "plugin/core/traffic_class.h"
#include "plugin/occupancy/segment.h"
#include "plugin/transport/tcp/tcp_transport.h"
#include "plugin/transport/wrap/wrap_transport.h"
#include "trirace/trirace.h"

namespace trirace::net {
namespace {

constexpr uint32_t kGenMask = 0x7fffff;  // generation bits packed in a request handle
constexpr uint64_t kRequestMarker = uint64_t{1} << 63;

absl::Status Invalid(const char* call, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(call, ": ", what));
}

}  // namespace

struct NetCore::Context {
  uint64_t comm_id = 0;
  CommConfig config;
  void* inner = nullptr;
  std::atomic<TrafficClass> cls{TrafficClass::kOther};
  std::atomic<int> refs{1};  // the ctx itself plus one per comm
  bool finalized = false;    // guarded by NetCore::mu_
};

struct NetCore::Request {
  std::atomic<bool> busy{false};
  uint16_t seq = 0;
  void* inner = nullptr;
  bool flush = false;
  int n = 0;
  TrafficClass cls = TrafficClass::kOther;
  uint64_t posted = 0;
};

struct NetCore::Comm {
  Kind kind = Kind::kListen;
  int dev = 0;
  int max_recvs = 1;
  Context* ctx = nullptr;
  void* inner = nullptr;
  uint64_t handle = 0;
  bool explicit_traffic_class = false;  // send: connect's trafficClass; recv: the context's
  std::optional<ClassMarks> class_marks;  // last marks class priority set
  std::array<Request, NCCL_NET_MAX_REQUESTS> reqs;
};

namespace {

std::atomic<NetCore*> g_core{nullptr};
std::mutex g_core_mu;

// NCCL dlcloses a net plugin after its last communicator is finalized (and
// the library is unloaded at exit): no TriRace thread may outlive the code
// it runs, so the publisher is stopped here. The core is freed only when no
// comm or context is left (the dlclose case); at exit with comms still
// open, NCCL's threads may still call in, so it stays.
struct UnloadGuard {
  ~UnloadGuard() { NetCore::OnUnload(); }
} g_unload_guard;

}  // namespace

NetCore& NetCore::Get() {
  NetCore* core = g_core.load(std::memory_order_acquire);
  if (core != nullptr) return *core;
  std::lock_guard<std::mutex> lock(g_core_mu);
  if (g_core.load(std::memory_order_relaxed) == nullptr) g_core.store(new NetCore(), std::memory_order_release);
  return *g_core.load(std::memory_order_relaxed);
}

void NetCore::OnUnload() {
  NetCore* core = g_core.load(std::memory_order_acquire);
  if (core == nullptr) return;
  core->publisher_.Stop();
  bool idle;
  {
    std::lock_guard<std::mutex> lock(core->mu_);
    idle = core->open_comms_.load() == 0 && core->contexts_.size() <= 1;
  }
  if (idle) {
    g_core.store(nullptr, std::memory_order_release);
    delete core;
  }
}


NetCore::NetCore() = default;
NetCore::~NetCore() = default;

absl::Status NetCore::Init(const InitArgs& args) {
  std::lock_guard<std::mutex> lock(mu_);
  if (args.logger != nullptr) InstallNcclLogSink(args.logger);
  if (initialized_) return init_status_;
  initialized_ = true;
#ifdef TRIRACE_PLUGIN_TCP_ONLY_COPY  // the test copy the wrapper tests load as their inner
  const std::string inner;
#else
  const std::string& inner = ParamString(ParamId::kNetInner);
#endif
  if (!inner.empty()) {
    transport_ = MakeWrapTransport(inner);
  } else {
    transport_ = std::make_unique<tcp::TcpTransport>();
  }
  init_status_ = transport_->Init(args);
  if (!init_status_.ok()) return init_status_;
  RefreshDeviceProps();
  class_priority_ = NetClassPriorityEnabled();
  if (class_priority_) {
    TRIRACE_INFO(NET, "class priority on: sends are marked DSCP EF / SO_PRIORITY 6 (P2P), "
                      "0 / 0 (SPARSE), CS1 / 1 (DENSE)");
  }
  auto ctx = std::make_unique<Context>();
  default_context_ = ctx.get();
  contexts_.push_back(std::move(ctx));
  std::vector<occupancy::OccupancyPublisher::NicInfo> nics;
  for (const auto& p : props_) nics.push_back({p->name, static_cast<uint32_t>(p->speed_mbps)});
  std::string segment;
#ifndef TRIRACE_PLUGIN_TCP_ONLY_COPY  // the wrapper publishes for it
  if (ParamBool(ParamId::kNetOccupancy)) segment = occupancy::SegmentName("");
#endif
  absl::Status pub = publisher_.Start(nics, segment, ParamInt(ParamId::kNetPublishUs));
  if (!pub.ok()) {
    TRIRACE_WARN(NET, "occupancy not published: %s", pub.ToString());
  } else if (!segment.empty()) {
    TRIRACE_INFO(NET, "publishing occupancy of %d device(s) in %s", static_cast<int>(nics.size()),
                 segment);
  }
  ready_.store(true, std::memory_order_release);
  return init_status_;
}

void NetCore::RefreshDeviceProps() {
  int n = transport_->NumDevices();
  for (int dev = static_cast<int>(props_.size()); dev < n; ++dev) {
    auto p = transport_->Properties(dev);
    props_.push_back(std::make_unique<DeviceProps>(p.ok() ? *p : DeviceProps{}));
  }
  num_devices_.store(static_cast<int>(props_.size()), std::memory_order_release);
}

absl::Status NetCore::RequireInit() {
  if (ready_.load(std::memory_order_acquire)) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) return absl::FailedPreconditionError("the net plugin is not initialised (init not called)");
  return init_status_.ok() ? absl::OkStatus() : init_status_;
}

void* NetCore::DefaultContext() { return default_context_; }

absl::Status NetCore::InitContext(uint64_t comm_id, const ncclNetCommConfig_v11_t* config, void** ctx) {
  if (ctx == nullptr) return Invalid("init", "ctx is NULL");
  *ctx = nullptr;
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  auto c = std::make_unique<Context>();
  c->comm_id = comm_id;
  if (config != nullptr) {
    int tc = config->trafficClass;
    if (tc == NCCL_NET_TRAFFIC_CLASS_UNDEF || (tc >= 0 && tc <= 255)) {
      c->config.traffic_class = tc;
    } else {
      TRIRACE_WARN(NET, "init: trafficClass=%d ignored (accepted: -1 or 0..255)", tc);
    }
  }
  TRIRACE_RETURN_IF_ERROR(transport_->InitContext(comm_id, c->config, &c->inner));
  std::lock_guard<std::mutex> lock(mu_);
  *ctx = c.get();
  contexts_.push_back(std::move(c));
  return absl::OkStatus();
}

absl::StatusOr<NetCore::Context*> NetCore::LookupContext(void* ctx, const char* call) {
  if (ctx == nullptr) return default_context_;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : contexts_) {
    if (c.get() == ctx && !c->finalized) return c.get();
  }
  return Invalid(call, absl::StrCat("ctx ", absl::Hex(reinterpret_cast<uintptr_t>(ctx)),
                                    " is not a live context of this plugin"));
}

absl::Status NetCore::Finalize(void* ctx) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (ctx == nullptr || ctx == default_context_) return Invalid("finalize", "ctx is not one init returned");
  auto c = LookupContext(ctx, "finalize");
  if (!c.ok()) return c.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    (*c)->finalized = true;  // its comms may still be closed later
  }
  absl::Status st = transport_->FinalizeContext((*c)->inner);
  std::lock_guard<std::mutex> lock(mu_);
  if (--(*c)->refs == 0) {
    contexts_.erase(std::find_if(contexts_.begin(), contexts_.end(),
                                 [&](const auto& p) { return p.get() == *c; }));
  }
  return st;
}

absl::Status NetCore::SetNetAttr(void* ctx, const ncclNetAttr_v11_t* attr) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (attr == nullptr) return Invalid("setNetAttr", "netAttr is NULL");
  auto c = LookupContext(ctx, "setNetAttr");
  if (!c.ok()) return c.status();
  (*c)->cls.store(ClassForOpMask(attr->op), std::memory_order_relaxed);
  return transport_->SetNetAttr((*c)->inner, *attr);
}

absl::Status NetCore::CheckDev(int dev, const char* call) {
  int n = num_devices_.load(std::memory_order_acquire);
  if (dev < 0 || dev >= n) {
    return Invalid(call, absl::StrCat("dev=", dev, " is not a device index (accepted: 0..", n - 1, ")"));
  }
  return absl::OkStatus();
}

absl::Status NetCore::Devices(int* ndev) {
  if (ndev == nullptr) return Invalid("devices", "ndev is NULL");
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  *ndev = num_devices_.load(std::memory_order_acquire);
  return absl::OkStatus();
}

absl::StatusOr<const DeviceProps*> NetCore::Properties(int dev) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  TRIRACE_RETURN_IF_ERROR(CheckDev(dev, "getProperties"));
  std::lock_guard<std::mutex> lock(mu_);
  return props_[dev].get();
}

absl::Status NetCore::MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t* props) {
  if (dev == nullptr || props == nullptr) return Invalid("makeVDevice", "d or props is NULL");
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  std::lock_guard<std::mutex> lock(mu_);
  TRIRACE_RETURN_IF_ERROR(transport_->MakeVDevice(dev, *props));
  RefreshDeviceProps();
  // The virtual NIC is published under its own index; readers merge by name.
  if (*dev >= 0 && *dev < static_cast<int>(props_.size())) {
    publisher_.AddNic({props_[*dev]->name, static_cast<uint32_t>(props_[*dev]->speed_mbps)});
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> NetCore::AddComm(std::unique_ptr<Comm> comm) {
  {
    std::lock_guard<std::mutex> lock(mu_);
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
    return Invalid(call, absl::StrCat("comm ", absl::Hex(reinterpret_cast<uintptr_t>(handle)),
                                      " is not an open ", kNames[static_cast<int>(kind)],
                                      " comm of this plugin (closed, or never returned by it)"));
  }
  return comm;
}

absl::Status NetCore::Listen(void* ctx, int dev, void* handle, void** listen_comm) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (handle == nullptr || listen_comm == nullptr) return Invalid("listen", "handle or listenComm is NULL");
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
  if (handle == nullptr || send_comm == nullptr) return Invalid("connect", "handle or sendComm is NULL");
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
  if (recv_comm == nullptr) return Invalid("accept", "recvComm is NULL");
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
  if (mhandle == nullptr) return Invalid("regMr", "mhandle is NULL");
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return Invalid("regMr", "comm is not an open send or receive comm");
  return transport_->RegMr(c->inner, data, size, type, mhandle);
}

absl::Status NetCore::RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                  int fd, void** mhandle) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (mhandle == nullptr) return Invalid("regMrDmaBuf", "mhandle is NULL");
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return Invalid("regMrDmaBuf", "comm is not an open send or receive comm");
  return transport_->RegMrDmaBuf(c->inner, data, size, type, offset, fd, mhandle);
}

absl::Status NetCore::DeregMr(void* comm, void* mhandle) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return Invalid("deregMr", "comm is not an open send or receive comm");
  return transport_->DeregMr(c->inner, mhandle);
}

void* NetCore::RequestHandle(const Comm& comm, int slot) const {
  uint64_t index = comms_.IndexOf(comm.handle) + 1;
  uint64_t gen = comms_.GenerationOf(comm.handle) & kGenMask;
  uint64_t h = kRequestMarker | (gen << 40) | (uint64_t{comm.reqs[slot].seq} << 24) |
               (uint64_t(slot) << 17) | index;
  return reinterpret_cast<void*>(h);
}

absl::StatusOr<std::pair<NetCore::Comm*, NetCore::Request*>> NetCore::LookupRequest(void* handle) {
  uint64_t h = reinterpret_cast<uint64_t>(handle);
  auto bad = [&] {
    return Invalid("test", absl::StrCat("request ", absl::Hex(h),
                                        " is not an outstanding request of this plugin"));
  };
  if (!(h & kRequestMarker)) return bad();
  uint32_t index = static_cast<uint32_t>(h & 0x1ffff) - 1;
  int slot = static_cast<int>((h >> 17) & 0x7f);
  uint16_t seq = static_cast<uint16_t>(h >> 24);
  uint32_t gen = static_cast<uint32_t>(h >> 40) & kGenMask;
  Comm* comm = comms_.LookupPacked(index, gen, kGenMask);
  if (comm == nullptr || slot >= NCCL_NET_MAX_REQUESTS || comm->kind == Kind::kListen) return bad();
  Request* req = &comm->reqs[slot];
  if (!req->busy.load(std::memory_order_acquire) || req->seq != seq) return bad();
  return std::make_pair(comm, req);
}

void NetCore::ApplyClassPriority(Comm& comm, TrafficClass cls) {
  const std::optional<ClassMarks> marks = MarksForClass(cls);
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

absl::Status NetCore::Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                            void* phandle, void** request) {
  if (request == nullptr) return Invalid("isend", "request is NULL");
  *request = nullptr;
  auto c = LookupComm(send_comm, Kind::kSend, "isend");
  if (!c.ok()) return c.status();
  if (data == nullptr && size > 0) return Invalid("isend", absl::StrCat("data is NULL with size=", size));
  if (size > static_cast<size_t>(INT_MAX)) {
    return Invalid("isend", absl::StrCat("size=", size, " exceeds the largest message (", INT_MAX, " bytes)"));
  }
  Comm* comm = *c;
  int slot = -1;
  for (int i = 0; i < NCCL_NET_MAX_REQUESTS && slot < 0; ++i) {
    bool expected = false;
    if (comm->reqs[i].busy.compare_exchange_strong(expected, true)) slot = i;
  }
  if (slot < 0) return absl::OkStatus();  // NCCL_NET_MAX_REQUESTS outstanding: retry later
  Request& req = comm->reqs[slot];
  const TrafficClass cls = comm->ctx->cls.load(std::memory_order_relaxed);
  if (class_priority_ && !comm->explicit_traffic_class) ApplyClassPriority(*comm, cls);
  void* inner = nullptr;
  absl::Status st = transport_->Isend(comm->inner, data, size, tag, mhandle, phandle, &inner);
  if (!st.ok() || inner == nullptr) {
    req.busy.store(false, std::memory_order_release);
    return st;
  }
  req.inner = inner;
  req.flush = false;
  req.n = 1;
  req.cls = cls;
  req.posted = size;
  req.seq++;
  publisher_.SendPosted(comm->dev, ClassIndex(req.cls), size);
  *request = RequestHandle(*comm, slot);
  return absl::OkStatus();
}

absl::Status NetCore::Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                            void** mhandles, void** phandles, void** request) {
  if (request == nullptr) return Invalid("irecv", "request is NULL");
  bool optional = *request == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION);
  *request = nullptr;
  auto c = LookupComm(recv_comm, Kind::kRecv, "irecv");
  if (!c.ok()) return c.status();
  Comm* comm = *c;
  const int max_recvs = comm->max_recvs;
  if (n < 1 || n > max_recvs || n > NCCL_NET_MAX_REQUESTS) {
    return Invalid("irecv", absl::StrCat("n=", n, " (accepted: 1..", max_recvs, ", maxRecvs)"));
  }
  if (data == nullptr || sizes == nullptr || tags == nullptr) return Invalid("irecv", "data, sizes or tags is NULL");
  uint64_t posted = 0;
  for (int i = 0; i < n; ++i) {
    if (data[i] == nullptr && sizes[i] > 0) {
      return Invalid("irecv", absl::StrCat("data[", i, "] is NULL with sizes[", i, "]=", sizes[i]));
    }
    if (sizes[i] > static_cast<size_t>(INT_MAX)) {
      return Invalid("irecv", absl::StrCat("sizes[", i, "]=", sizes[i], " exceeds ", INT_MAX, " bytes"));
    }
    posted += sizes[i];
  }
  int slot = -1;
  for (int i = 0; i < NCCL_NET_MAX_REQUESTS && slot < 0; ++i) {
    bool expected = false;
    if (comm->reqs[i].busy.compare_exchange_strong(expected, true)) slot = i;
  }
  if (slot < 0) return absl::OkStatus();
  Request& req = comm->reqs[slot];
  void* inner = optional ? reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION) : nullptr;
  absl::Status st = transport_->Irecv(comm->inner, n, data, sizes, tags, mhandles, phandles, &inner);
  if (inner == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION)) inner = nullptr;
  if (!st.ok() || inner == nullptr) {
    req.busy.store(false, std::memory_order_release);
    return st;
  }
  req.inner = inner;
  req.flush = false;
  req.n = n;
  req.cls = comm->ctx->cls.load(std::memory_order_relaxed);
  req.posted = posted;
  req.seq++;
  publisher_.RecvPosted(comm->dev, ClassIndex(req.cls), posted);
  *request = RequestHandle(*comm, slot);
  return absl::OkStatus();
}

absl::Status NetCore::Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                             void** request) {
  if (request == nullptr) return Invalid("iflush", "request is NULL");
  *request = nullptr;
  auto c = LookupComm(recv_comm, Kind::kRecv, "iflush");
  if (!c.ok()) return c.status();
  if (n < 0 || n > NCCL_NET_MAX_REQUESTS) return Invalid("iflush", absl::StrCat("n=", n));
  Comm* comm = *c;
  int slot = -1;
  for (int i = 0; i < NCCL_NET_MAX_REQUESTS && slot < 0; ++i) {
    bool expected = false;
    if (comm->reqs[i].busy.compare_exchange_strong(expected, true)) slot = i;
  }
  if (slot < 0) return absl::OkStatus();
  Request& req = comm->reqs[slot];
  void* inner = nullptr;
  absl::Status st = transport_->Iflush(comm->inner, n, data, sizes, mhandles, &inner);
  if (!st.ok() || inner == nullptr) {
    req.busy.store(false, std::memory_order_release);
    return st;
  }
  req.inner = inner;
  req.flush = true;
  req.n = 0;
  req.posted = 0;
  req.seq++;
  *request = RequestHandle(*comm, slot);
  return absl::OkStatus();
}

absl::Status NetCore::Test(void* request, int* done, int* sizes) {
  if (done == nullptr) return Invalid("test", "done is NULL");
  *done = 0;
  auto found = LookupRequest(request);
  if (!found.ok()) return found.status();
  auto [comm, req] = *found;
  int local[NCCL_NET_MAX_REQUESTS] = {};
  absl::Status st = transport_->Test(req->inner, done, local);
  bool send = comm->kind == Kind::kSend;
  if (!st.ok()) {
    *done = 0;
    if (!req->flush) publisher_.Abandoned(comm->dev, ClassIndex(req->cls), send, req->posted);
    req->busy.store(false, std::memory_order_release);
    return st;
  }
  if (!*done) return absl::OkStatus();
  if (!req->flush) {
    uint64_t total = 0;
    for (int i = 0; i < req->n; ++i) total += static_cast<uint64_t>(std::max(local[i], 0));
    if (send) {
      publisher_.SendCompleted(comm->dev, ClassIndex(req->cls), req->posted, total);
    } else {
      publisher_.RecvCompleted(comm->dev, ClassIndex(req->cls), req->posted, total);
    }
    if (sizes != nullptr) std::memcpy(sizes, local, sizeof(int) * req->n);
  }
  req->busy.store(false, std::memory_order_release);
  return absl::OkStatus();
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
    std::lock_guard<std::mutex> lock(mu_);
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
  if (dptr_mhandle == nullptr) return Invalid("getDeviceMr", "dptr_mhandle is NULL");
  Comm* c = comms_.Lookup(reinterpret_cast<uint64_t>(comm));
  if (c == nullptr || c->kind == Kind::kListen) return Invalid("getDeviceMr", "comm is not an open send or receive comm");
  return transport_->GetDeviceMr(c->inner, mhandle, dptr_mhandle);
}

absl::Status NetCore::IrecvConsumed(void* recv_comm, int n, void* request) {
  auto c = LookupComm(recv_comm, Kind::kRecv, "irecvConsumed");
  if (!c.ok()) return c.status();
  auto found = LookupRequest(request);
  return transport_->IrecvConsumed((*c)->inner, n, found.ok() ? found->second->inner : nullptr);
}

}  // namespace trirace::net
