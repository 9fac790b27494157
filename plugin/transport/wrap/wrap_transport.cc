#include "plugin/transport/wrap/wrap_transport.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "plugin/loader/net_plugin_loader.h"

extern "C" {
extern const ncclNet_v11_t ncclNetPlugin_v11;
}

namespace trirace::net {
namespace {

const char* ResultName(ncclResult_t r) {
  switch (r) {
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "an unknown ncclResult_t";
  }
}

absl::Status FromInner(const char* call, ncclResult_t r) {
  if (r == ncclSuccess) return absl::OkStatus();
  std::string what = absl::StrCat("inner plugin ", call, " returned ", ResultName(r));
  switch (r) {
    case ncclRemoteError: return RemoteError(what);
    case ncclInternalError: return InternalError(what);
    case ncclInvalidArgument: return absl::InvalidArgumentError(what);
    case ncclInvalidUsage: return absl::FailedPreconditionError(what);
    default: return absl::UnknownError(what);  // -> ncclSystemError
  }
}

class WrapTransport : public Transport {
 public:
  explicit WrapTransport(std::string inner) : inner_name_(std::move(inner)) {}

  absl::Status Init(const InitArgs& args) override {
    args_ = args;
    TRIRACE_RETURN_IF_ERROR(Load());
    ncclNetCommConfig_v11_t undefined{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    TRIRACE_RETURN_IF_ERROR(FromInner("init", api_->Init(&default_ctx_, 0, &undefined, args.logger, args.profiler)));
    int n = 0;
    TRIRACE_RETURN_IF_ERROR(FromInner("devices", api_->Devices(&n)));
    ndev_ = n;
    TRIRACE_INFO(NET, "wrapping net plugin '%s' (%s, ncclNetPlugin_v%d) with %d device(s)", api_->name(),
                 plugin_.path, api_->version(), n);
    return absl::OkStatus();
  }

  int NumDevices() const override { return ndev_; }

  absl::StatusOr<DeviceProps> Properties(int dev) const override {
    ncclNetProperties_v11_t q{};
    TRIRACE_RETURN_IF_ERROR(FromInner("getProperties", api_->GetProperties(dev, &q)));
    DeviceProps p;
    p.name = q.name ? q.name : "";
    p.pci_path = q.pciPath ? q.pciPath : "";
    p.guid = q.guid;
    p.ptr_support = q.ptrSupport;
    p.reg_is_global = q.regIsGlobal;
    p.speed_mbps = q.speed;
    p.port = q.port;
    p.latency_us = q.latency;
    p.max_comms = q.maxComms;
    p.max_recvs = q.maxRecvs;
    p.net_device_type = q.netDeviceType;
    p.net_device_version = q.netDeviceVersion;
    p.force_flush = q.forceFlush;
    p.vprops = q.vProps;
    p.max_p2p_bytes = q.maxP2pBytes;
    p.max_coll_bytes = q.maxCollBytes;
    p.max_multi_request_size = q.maxMultiRequestSize;
    return p;
  }

  absl::Status MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t& props) override {
    ncclNetVDeviceProps_v11_t copy = props;
    const ncclResult_t r = api_->MakeVDevice(dev, &copy);
    if (r == ncclInvalidUsage) return absl::FailedPreconditionError("makeVDevice: the inner plugin has no virtual NICs");
    TRIRACE_RETURN_IF_ERROR(FromInner("makeVDevice", r));
    ndev_ = std::max(ndev_, *dev + 1);
    return absl::OkStatus();
  }

  absl::Status InitContext(uint64_t comm_id, const CommConfig& config, void** inner_ctx) override {
    *inner_ctx = nullptr;
    ncclNetCommConfig_v11_t cfg{config.traffic_class};
    return FromInner("init", api_->Init(inner_ctx, comm_id, &cfg, args_.logger, args_.profiler));
  }

  absl::Status FinalizeContext(void* inner_ctx) override {
    if (inner_ctx == nullptr) return absl::OkStatus();
    return FromInner("finalize", api_->Finalize(inner_ctx));
  }

  absl::Status SetNetAttr(void* inner_ctx, const ncclNetAttr_v11_t& attr) override {
    ncclNetAttr_v11_t copy = attr;
    return FromInner("setNetAttr", api_->SetNetAttr(Ctx(inner_ctx), &copy));
  }

  absl::Status Listen(void* inner_ctx, int dev, void* handle, void** listen_comm) override {
    return FromInner("listen", api_->Listen(Ctx(inner_ctx), dev, handle, listen_comm));
  }

  absl::Status Connect(void* inner_ctx, int dev, const CommConfig& config, void* handle, void** send_comm,
                       ncclNetDeviceHandle_v11_t** dev_comm) override {
    ncclNetCommConfig_v11_t cfg{config.traffic_class};
    return FromInner("connect", api_->Connect(Ctx(inner_ctx), dev, &cfg, handle, send_comm, dev_comm));
  }

  absl::Status Accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** dev_comm) override {
    return FromInner("accept", api_->Accept(listen_comm, recv_comm, dev_comm));
  }

  absl::Status RegMr(void* comm, void* data, size_t size, int type, void** mhandle) override {
    return FromInner("regMr", api_->RegMr(comm, data, size, type, mhandle));
  }

  absl::Status RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle) override {
    const ncclResult_t r = api_->RegMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
    if (r == ncclInvalidUsage) return absl::FailedPreconditionError("regMrDmaBuf: not provided by the inner plugin");
    return FromInner("regMrDmaBuf", r);
  }

  absl::Status DeregMr(void* comm, void* mhandle) override {
    return FromInner("deregMr", api_->DeregMr(comm, mhandle));
  }

  absl::Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                     void** request) override {
    return FromInner("isend", api_->Isend(send_comm, data, size, tag, mhandle, phandle, request));
  }

  absl::Status Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                     void** phandles, void** request) override {
    return FromInner("irecv", api_->Irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request));
  }

  absl::Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                      void** request) override {
    return FromInner("iflush", api_->Iflush(recv_comm, n, data, sizes, mhandles, request));
  }

  absl::Status Test(void* request, int* done, int* sizes) override {
    return FromInner("test", api_->Test(request, done, sizes));
  }

  absl::Status SetSendClass(void*, int, int) override {
    return absl::UnimplementedError("the inner plugin's sockets are its own (wrapper mode)");
  }
  absl::Status SetRecvClass(void*, int, int) override {
    return absl::UnimplementedError("the inner plugin's sockets are its own (wrapper mode)");
  }
  absl::Status CloseSend(void* c) override { return FromInner("closeSend", api_->CloseSend(c)); }
  absl::Status CloseRecv(void* c) override { return FromInner("closeRecv", api_->CloseRecv(c)); }
  absl::Status CloseListen(void* c) override { return FromInner("closeListen", api_->CloseListen(c)); }

  absl::Status GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) override {
    return FromInner("getDeviceMr", api_->GetDeviceMr(comm, mhandle, dptr_mhandle));
  }

  absl::Status IrecvConsumed(void* recv_comm, int n, void* request) override {
    return FromInner("irecvConsumed", api_->IrecvConsumed(recv_comm, n, request));
  }

 private:
  void* Ctx(void* inner_ctx) const { return inner_ctx != nullptr ? inner_ctx : default_ctx_; }

  absl::Status Load() {
    absl::StatusOr<NetPlugin> loaded = LoadNetPlugin(NetPluginFileNames(inner_name_));
    if (!loaded.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("TRIRACE_NET_INNER='", inner_name_, "': no usable net plugin: ", loaded.status().message()));
    }
    if (loaded->api->raw_table() == &ncclNetPlugin_v11) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TRIRACE_NET_INNER='", inner_name_, "' resolves to the TriRace plugin itself (", loaded->path,
          "); name the plugin to wrap (e.g. an InfiniBand or EFA net plugin)"));
    }
    plugin_ = *std::move(loaded);  // kept loaded for the life of the process
    api_ = plugin_.api.get();
    return absl::OkStatus();
  }

  const std::string inner_name_;
  InitArgs args_;
  NetPlugin plugin_;
  NetPluginApi* api_ = nullptr;
  void* default_ctx_ = nullptr;
  int ndev_ = 0;
};

}  // namespace

std::unique_ptr<Transport> MakeWrapTransport(const std::string& inner) {
  return std::make_unique<WrapTransport>(inner);
}

}  // namespace trirace::net
