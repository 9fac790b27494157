#include "plugin/wrap.h"

#include <dlfcn.h>

#include <climits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"

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
    ncclResult_t r = ncclSuccess;
    switch (version_) {
      case 11:
        r = v11_->init(&default_ctx_, 0, nullptr, args.logger, args.profiler);
        break;
      case 10: r = v10_->init(args.logger, args.profiler); break;
      case 9: r = v9_->init(args.logger); break;
      default: r = v8_->init(args.logger); break;
    }
    TRIRACE_RETURN_IF_ERROR(FromInner("init", r));
    int n = 0;
    TRIRACE_RETURN_IF_ERROR(FromInner("devices", Call(&ncclNet_v11_t::devices, &ncclNet_v10_t::devices,
                                                      &ncclNet_v9_t::devices, &ncclNet_v8_t::devices, &n)));
    ndev_ = n;
    TRIRACE_INFO(NET, "wrapping net plugin '%s' (%s, ncclNetPlugin_v%d) with %d device(s)", name_,
                 path_, version_, n);
    return absl::OkStatus();
  }

  int NumDevices() const override { return ndev_; }

  absl::StatusOr<DeviceProps> Properties(int dev) const override {
    DeviceProps p;
    if (version_ == 8) {
      ncclNetProperties_v8_t q{};
      TRIRACE_RETURN_IF_ERROR(FromInner("getProperties", v8_->getProperties(dev, &q)));
      Common(q, &p);
      p.vprops.ndevs = 1;
      p.vprops.devs[0] = dev;
      p.max_p2p_bytes = size_t{1} << 30;
      p.max_coll_bytes = size_t{512} << 20;
      return p;
    }
    ncclNetProperties_v11_t q{};
    ncclResult_t r;
    if (version_ == 11) {
      r = v11_->getProperties(dev, &q);
    } else {
      ncclNetProperties_v10_t q10{};
      r = version_ == 10 ? v10_->getProperties(dev, &q10) : v9_->getProperties(dev, &q10);
      std::memcpy(&q, &q10, sizeof(q10));  // v10/v9 are v11 without its last field
      q.maxMultiRequestSize = 1;
    }
    TRIRACE_RETURN_IF_ERROR(FromInner("getProperties", r));
    Common(q, &p);
    p.force_flush = q.forceFlush;
    p.vprops = q.vProps;
    p.max_p2p_bytes = q.maxP2pBytes;
    p.max_coll_bytes = q.maxCollBytes;
    p.max_multi_request_size = q.maxMultiRequestSize;
    return p;
  }

  absl::Status MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t& props) override {
    ncclNetVDeviceProps_v11_t copy = props;
    auto fn = version_ == 11 ? v11_->makeVDevice : version_ == 10 ? v10_->makeVDevice
              : version_ == 9 ? v9_->makeVDevice : nullptr;
    if (fn == nullptr) return absl::FailedPreconditionError("makeVDevice: the inner plugin has no virtual NICs");
    TRIRACE_RETURN_IF_ERROR(FromInner("makeVDevice", fn(dev, &copy)));
    ndev_ = std::max(ndev_, *dev + 1);
    return absl::OkStatus();
  }

  absl::Status InitContext(uint64_t comm_id, const CommConfig& config, void** inner_ctx) override {
    *inner_ctx = nullptr;
    if (version_ != 11) return absl::OkStatus();
    ncclNetCommConfig_v11_t cfg{config.traffic_class};
    return FromInner("init", v11_->init(inner_ctx, comm_id, &cfg, args_.logger, args_.profiler));
  }

  absl::Status FinalizeContext(void* inner_ctx) override {
    if (version_ != 11 || inner_ctx == nullptr || v11_->finalize == nullptr) return absl::OkStatus();
    return FromInner("finalize", v11_->finalize(inner_ctx));
  }

  absl::Status SetNetAttr(void* inner_ctx, const ncclNetAttr_v11_t& attr) override {
    if (version_ != 11 || v11_->setNetAttr == nullptr) return absl::OkStatus();
    ncclNetAttr_v11_t copy = attr;
    return FromInner("setNetAttr", v11_->setNetAttr(Ctx(inner_ctx), &copy));
  }

  absl::Status Listen(void* inner_ctx, int dev, void* handle, void** listen_comm) override {
    ncclResult_t r = version_ == 11 ? v11_->listen(Ctx(inner_ctx), dev, handle, listen_comm)
                     : version_ == 10 ? v10_->listen(dev, handle, listen_comm)
                     : version_ == 9  ? v9_->listen(dev, handle, listen_comm)
                                      : v8_->listen(dev, handle, listen_comm);
    return FromInner("listen", r);
  }

  absl::Status Connect(void* inner_ctx, int dev, const CommConfig& config, void* handle,
                       void** send_comm, ncclNetDeviceHandle_v11_t** dev_comm) override {
    ncclNetCommConfig_v10_t cfg{config.traffic_class};
    ncclResult_t r = version_ == 11 ? v11_->connect(Ctx(inner_ctx), dev, handle, send_comm, dev_comm)
                     : version_ == 10 ? v10_->connect(dev, &cfg, handle, send_comm, dev_comm)
                     : version_ == 9  ? v9_->connect(dev, handle, send_comm, dev_comm)
                                      : v8_->connect(dev, handle, send_comm, dev_comm);
    return FromInner("connect", r);
  }

  absl::Status Accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** dev_comm) override {
    return FromInner("accept", Call(&ncclNet_v11_t::accept, &ncclNet_v10_t::accept, &ncclNet_v9_t::accept,
                                    &ncclNet_v8_t::accept, listen_comm, recv_comm, dev_comm));
  }

  absl::Status RegMr(void* comm, void* data, size_t size, int type, void** mhandle) override {
    return FromInner("regMr", Call(&ncclNet_v11_t::regMr, &ncclNet_v10_t::regMr, &ncclNet_v9_t::regMr,
                                   &ncclNet_v8_t::regMr, comm, data, size, type, mhandle));
  }

  absl::Status RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle) override {
    auto fn = version_ == 11 ? v11_->regMrDmaBuf : version_ == 10 ? v10_->regMrDmaBuf
              : version_ == 9 ? v9_->regMrDmaBuf : v8_->regMrDmaBuf;
    if (fn == nullptr) return absl::FailedPreconditionError("regMrDmaBuf: not provided by the inner plugin");
    return FromInner("regMrDmaBuf", fn(comm, data, size, type, offset, fd, mhandle));
  }

  absl::Status DeregMr(void* comm, void* mhandle) override {
    return FromInner("deregMr", Call(&ncclNet_v11_t::deregMr, &ncclNet_v10_t::deregMr,
                                     &ncclNet_v9_t::deregMr, &ncclNet_v8_t::deregMr, comm, mhandle));
  }

  absl::Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                     void** request) override {
    ncclResult_t r = version_ == 11 ? v11_->isend(send_comm, data, size, tag, mhandle, phandle, request)
                     : version_ == 10 ? v10_->isend(send_comm, data, size, tag, mhandle, phandle, request)
                     : version_ == 9  ? v9_->isend(send_comm, data, size, tag, mhandle, request)
                                      : v8_->isend(send_comm, data, static_cast<int>(size), tag, mhandle, request);
    return FromInner("isend", r);
  }

  absl::Status Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                     void** phandles, void** request) override {
    ncclResult_t r;
    if (version_ == 11) {
      r = v11_->irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
    } else if (version_ == 10) {
      r = v10_->irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
    } else if (version_ == 9) {
      r = v9_->irecv(recv_comm, n, data, sizes, tags, mhandles, request);
    } else {
      std::vector<int> int_sizes(sizes, sizes + n);  // sizes were checked <= INT_MAX
      if (*request == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION)) *request = nullptr;
      r = v8_->irecv(recv_comm, n, data, int_sizes.data(), tags, mhandles, request);
    }
    return FromInner("irecv", r);
  }

  absl::Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                      void** request) override {
    return FromInner("iflush", Call(&ncclNet_v11_t::iflush, &ncclNet_v10_t::iflush, &ncclNet_v9_t::iflush,
                                    &ncclNet_v8_t::iflush, recv_comm, n, data, sizes, mhandles, request));
  }

  absl::Status Test(void* request, int* done, int* sizes) override {
    return FromInner("test", Call(&ncclNet_v11_t::test, &ncclNet_v10_t::test, &ncclNet_v9_t::test,
                                  &ncclNet_v8_t::test, request, done, sizes));
  }

  absl::Status SetSendClass(void*, int, int) override {
    return absl::UnimplementedError("the inner plugin's sockets are its own (wrapper mode)");
  }
  absl::Status SetRecvClass(void*, int, int) override {
    return absl::UnimplementedError("the inner plugin's sockets are its own (wrapper mode)");
  }
  absl::Status CloseSend(void* c) override {
    return FromInner("closeSend", Call(&ncclNet_v11_t::closeSend, &ncclNet_v10_t::closeSend,
                                       &ncclNet_v9_t::closeSend, &ncclNet_v8_t::closeSend, c));
  }
  absl::Status CloseRecv(void* c) override {
    return FromInner("closeRecv", Call(&ncclNet_v11_t::closeRecv, &ncclNet_v10_t::closeRecv,
                                       &ncclNet_v9_t::closeRecv, &ncclNet_v8_t::closeRecv, c));
  }
  absl::Status CloseListen(void* c) override {
    return FromInner("closeListen", Call(&ncclNet_v11_t::closeListen, &ncclNet_v10_t::closeListen,
                                         &ncclNet_v9_t::closeListen, &ncclNet_v8_t::closeListen, c));
  }

  absl::Status GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) override {
    auto fn = version_ == 11 ? v11_->getDeviceMr : version_ == 10 ? v10_->getDeviceMr
              : version_ == 9 ? v9_->getDeviceMr : v8_->getDeviceMr;
    if (fn == nullptr) {
      *dptr_mhandle = nullptr;
      return absl::OkStatus();
    }
    return FromInner("getDeviceMr", fn(comm, mhandle, dptr_mhandle));
  }

  absl::Status IrecvConsumed(void* recv_comm, int n, void* request) override {
    auto fn = version_ == 11 ? v11_->irecvConsumed : version_ == 10 ? v10_->irecvConsumed
              : version_ == 9 ? v9_->irecvConsumed : v8_->irecvConsumed;
    if (fn == nullptr) return absl::OkStatus();
    return FromInner("irecvConsumed", fn(recv_comm, n, request));
  }

 private:
  void* Ctx(void* inner_ctx) const { return inner_ctx != nullptr ? inner_ctx : default_ctx_; }

  // Calls the member shared by every table version (same signature in all).
  template <typename F11, typename F10, typename F9, typename F8, typename... Args>
  ncclResult_t Call(F11 f11, F10 f10, F9 f9, F8 f8, Args... args) const {
    switch (version_) {
      case 11: return (v11_->*f11)(args...);
      case 10: return (v10_->*f10)(args...);
      case 9: return (v9_->*f9)(args...);
      default: return (v8_->*f8)(args...);
    }
  }

  template <typename Props>
  static void Common(const Props& q, DeviceProps* p) {
    p->name = q.name ? q.name : "";
    p->pci_path = q.pciPath ? q.pciPath : "";
    p->guid = q.guid;
    p->ptr_support = q.ptrSupport;
    p->reg_is_global = q.regIsGlobal;
    p->speed_mbps = q.speed;
    p->port = q.port;
    p->latency_us = q.latency;
    p->max_comms = q.maxComms;
    p->max_recvs = q.maxRecvs;
    p->net_device_type = q.netDeviceType;
    p->net_device_version = q.netDeviceVersion;
  }

  absl::Status Load() {
    std::vector<std::string> candidates = {inner_name_};
    if (inner_name_.find('/') == std::string::npos) {
      candidates.push_back(absl::StrCat("libnccl-net-", inner_name_, ".so"));
    }
    std::string errors;
    for (const std::string& path : candidates) {
      dlerror();
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        const char* e = dlerror();
        absl::StrAppend(&errors, "\n  ", path, ": ", e ? e : "not found");
        continue;
      }
      const struct {
        const char* symbol;
        int version;
      } kSymbols[] = {{TRIRACE_NCCL_NET_SYMBOL_V11, 11}, {TRIRACE_NCCL_NET_SYMBOL_V10, 10},
                      {TRIRACE_NCCL_NET_SYMBOL_V9, 9}, {TRIRACE_NCCL_NET_SYMBOL_V8, 8}};
      for (const auto& s : kSymbols) {
        void* table = dlsym(h, s.symbol);
        if (table == nullptr) continue;
        if (table == &ncclNetPlugin_v11) {
          return absl::InvalidArgumentError(absl::StrCat(
              "TRIRACE_NET_INNER='", inner_name_, "' resolves to the TriRace plugin itself (", path,
              "); name the plugin to wrap (e.g. an InfiniBand or EFA net plugin)"));
        }
        version_ = s.version;
        v11_ = static_cast<const ncclNet_v11_t*>(table);
        v10_ = static_cast<const ncclNet_v10_t*>(table);
        v9_ = static_cast<const ncclNet_v9_t*>(table);
        v8_ = static_cast<const ncclNet_v8_t*>(table);
        name_ = v11_->name ? v11_->name : "?";  // `name` is the first field of every version
        path_ = path;
        handle_ = h;  // kept loaded for the life of the process
        return absl::OkStatus();
      }
      dlclose(h);
      absl::StrAppend(&errors, "\n  ", path, ": exports none of ncclNetPlugin_v11/_v10/_v9/_v8");
    }
    return absl::FailedPreconditionError(
        absl::StrCat("TRIRACE_NET_INNER='", inner_name_, "': no usable net plugin:", errors));
  }

  const std::string inner_name_;
  InitArgs args_;
  void* handle_ = nullptr;
  int version_ = 0;
  const ncclNet_v11_t* v11_ = nullptr;
  const ncclNet_v10_t* v10_ = nullptr;
  const ncclNet_v9_t* v9_ = nullptr;
  const ncclNet_v8_t* v8_ = nullptr;
  std::string name_;
  std::string path_;
  void* default_ctx_ = nullptr;
  int ndev_ = 0;
};

}  // namespace

std::unique_ptr<Transport> MakeWrapTransport(const std::string& inner) {
  return std::make_unique<WrapTransport>(inner);
}

}  // namespace trirace::net
