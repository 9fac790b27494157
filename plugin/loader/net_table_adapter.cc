// AdaptNetTable: one class template over the four table versions; every
// version difference is an `if constexpr`, decided when the table is
// adapted, never per call.
#include <climits>
#include <memory>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "plugin/loader/net_plugin_loader.h"

namespace trirace::net {
namespace {

// NCCL's message limits for a v8 plugin, which reports none.
constexpr size_t kV8MaxP2pBytes = size_t{1} << 30;
constexpr size_t kV8MaxCollBytes = size_t{512} << 20;

// The context an older table's adapter hands out: the comm config that
// v11 would have kept in the plugin's own context.
struct AdapterContext {
  ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
};

template <typename Table, int kVersion>
class TableApi final : public NetPluginApi {
 public:
  static constexpr bool kContexts = kVersion >= 11;  // init per communicator, listen/connect take ctx
  static constexpr bool kSizeT = kVersion >= 9;      // size_t sizes, vProps, makeVDevice

  explicit TableApi(const Table* t) : NetPluginApi(kVersion, t->name ? t->name : "?", t), t_(t) {}

  ncclResult_t Init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t logger,
                    ncclProfilerCallback_t profiler) override {
    if constexpr (kContexts) {
      return t_->init(ctx, comm_id, config, logger, profiler);
    } else {
      (void)comm_id;
      {
        absl::MutexLock lock(&init_mu_);
        if (!initialized_) {
          ncclResult_t r;
          if constexpr (kVersion == 10) {
            r = t_->init(logger, profiler);
          } else {
            (void)profiler;
            r = t_->init(logger);
          }
          if (r != ncclSuccess) return r;
          initialized_ = true;
        }
      }
      auto c = std::make_unique<AdapterContext>();
      if (config != nullptr) c->config = *config;
      *ctx = c.get();
      absl::MutexLock lock(&contexts_mu_);
      contexts_.push_back(std::move(c));
      return ncclSuccess;
    }
  }

  ncclResult_t Finalize(void* ctx) override {
    if constexpr (kContexts) {
      return t_->finalize != nullptr ? t_->finalize(ctx) : ncclSuccess;
    } else {
      // Contexts nobody finalizes (NCCL has no finalize below v11) go with
      // the adapter.
      absl::MutexLock lock(&contexts_mu_);
      std::erase_if(contexts_, [ctx](const std::unique_ptr<AdapterContext>& c) { return c.get() == ctx; });
      return ncclSuccess;
    }
  }

  ncclResult_t Devices(int* ndev) override { return t_->devices(ndev); }

  ncclResult_t GetProperties(int dev, ncclNetProperties_v11_t* props) override {
    *props = ncclNetProperties_v11_t{};
    if constexpr (kVersion == 11) {
      return t_->getProperties(dev, props);
    } else if constexpr (kSizeT) {
      ncclNetProperties_v10_t old{};
      const ncclResult_t r = t_->getProperties(dev, &old);
      static_assert(sizeof(old) <= sizeof(*props));
      std::memcpy(props, &old, sizeof(old));  // v10 and v9 are v11 without its last field
      props->maxMultiRequestSize = 1;
      return r;
    } else {
      ncclNetProperties_v8_t old{};
      const ncclResult_t r = t_->getProperties(dev, &old);
      props->name = old.name;
      props->pciPath = old.pciPath;
      props->guid = old.guid;
      props->ptrSupport = old.ptrSupport;
      props->regIsGlobal = old.regIsGlobal;
      props->speed = old.speed;
      props->port = old.port;
      props->latency = old.latency;
      props->maxComms = old.maxComms;
      props->maxRecvs = old.maxRecvs;
      props->netDeviceType = old.netDeviceType;
      props->netDeviceVersion = old.netDeviceVersion;
      props->vProps.ndevs = 1;
      props->vProps.devs[0] = dev;
      props->maxP2pBytes = kV8MaxP2pBytes;
      props->maxCollBytes = kV8MaxCollBytes;
      props->maxMultiRequestSize = 1;
      return r;
    }
  }

  ncclResult_t MakeVDevice(int* dev, ncclNetVDeviceProps_v11_t* props) override {
    if constexpr (kSizeT) {
      return t_->makeVDevice != nullptr ? t_->makeVDevice(dev, props) : ncclInvalidUsage;
    } else {
      (void)dev;
      (void)props;
      return ncclInvalidUsage;
    }
  }

  ncclResult_t SetNetAttr(void* ctx, ncclNetAttr_v11_t* attr) override {
    if constexpr (kContexts) {
      if (t_->setNetAttr != nullptr) return t_->setNetAttr(ctx, attr);
    }
    (void)ctx;
    (void)attr;
    return ncclSuccess;  // a hint: a table without it loses nothing
  }

  ncclResult_t Listen(void* ctx, int dev, void* handle, void** listen_comm) override {
    if constexpr (kContexts) {
      return t_->listen(ctx, dev, handle, listen_comm);
    } else {
      (void)ctx;
      return t_->listen(dev, handle, listen_comm);
    }
  }

  ncclResult_t Connect(void* ctx, int dev, ncclNetCommConfig_v11_t* config, void* handle, void** send_comm,
                       ncclNetDeviceHandle_v11_t** dev_comm) override {
    if constexpr (kContexts) {
      (void)config;
      return t_->connect(ctx, dev, handle, send_comm, dev_comm);
    } else if constexpr (kVersion == 10) {
      ncclNetCommConfig_v11_t undefined{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      ncclNetCommConfig_v11_t* use = config != nullptr ? config
                                     : ctx != nullptr  ? &static_cast<AdapterContext*>(ctx)->config
                                                       : &undefined;
      return t_->connect(dev, use, handle, send_comm, dev_comm);
    } else {
      (void)ctx;
      (void)config;
      return t_->connect(dev, handle, send_comm, dev_comm);
    }
  }

  ncclResult_t Accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** dev_comm) override {
    return t_->accept(listen_comm, recv_comm, dev_comm);
  }

  ncclResult_t RegMr(void* comm, void* data, size_t size, int type, void** mhandle) override {
    return t_->regMr(comm, data, size, type, mhandle);
  }

  ncclResult_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle) override {
    if (t_->regMrDmaBuf == nullptr) return ncclInvalidUsage;
    return t_->regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
  }

  ncclResult_t DeregMr(void* comm, void* mhandle) override { return t_->deregMr(comm, mhandle); }

  ncclResult_t GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) override {
    if (t_->getDeviceMr == nullptr) {
      *dptr_mhandle = nullptr;
      return ncclSuccess;
    }
    return t_->getDeviceMr(comm, mhandle, dptr_mhandle);
  }

  ncclResult_t Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                     void** request) override {
    if constexpr (kVersion >= 10) {
      return t_->isend(send_comm, data, size, tag, mhandle, phandle, request);
    } else if constexpr (kSizeT) {
      (void)phandle;
      return t_->isend(send_comm, data, size, tag, mhandle, request);
    } else {
      (void)phandle;
      if (size > static_cast<size_t>(INT_MAX)) return ncclInvalidArgument;
      return t_->isend(send_comm, data, static_cast<int>(size), tag, mhandle, request);
    }
  }

  ncclResult_t Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                     void** phandles, void** request) override {
    if constexpr (kVersion >= 10) {
      return t_->irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
    } else if constexpr (kSizeT) {
      (void)phandles;
      return t_->irecv(recv_comm, n, data, sizes, tags, mhandles, request);
    } else {
      (void)phandles;
      std::vector<int> int_sizes(static_cast<size_t>(n > 0 ? n : 0));
      for (int i = 0; i < n; ++i) {
        if (sizes[i] > static_cast<size_t>(INT_MAX)) return ncclInvalidArgument;
        int_sizes[static_cast<size_t>(i)] = static_cast<int>(sizes[i]);
      }
      // v8 predates optional receive completion: it must report every receive.
      if (*request == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION)) *request = nullptr;
      return t_->irecv(recv_comm, n, data, int_sizes.data(), tags, mhandles, request);
    }
  }

  ncclResult_t Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) override {
    return t_->iflush(recv_comm, n, data, sizes, mhandles, request);
  }

  ncclResult_t Test(void* request, int* done, int* sizes) override { return t_->test(request, done, sizes); }

  ncclResult_t IrecvConsumed(void* recv_comm, int n, void* request) override {
    return t_->irecvConsumed != nullptr ? t_->irecvConsumed(recv_comm, n, request) : ncclSuccess;
  }

  ncclResult_t CloseSend(void* send_comm) override { return t_->closeSend(send_comm); }
  ncclResult_t CloseRecv(void* recv_comm) override { return t_->closeRecv(recv_comm); }
  ncclResult_t CloseListen(void* listen_comm) override { return t_->closeListen(listen_comm); }

 private:
  const Table* const t_;
  absl::Mutex init_mu_;
  bool initialized_ ABSL_GUARDED_BY(init_mu_) = false;
  absl::Mutex contexts_mu_;
  std::vector<std::unique_ptr<AdapterContext>> contexts_ ABSL_GUARDED_BY(contexts_mu_);
};

}  // namespace

std::unique_ptr<NetPluginApi> AdaptNetTable(const void* table, int version) {
  if (table == nullptr) return nullptr;
  switch (version) {
    case 11: return std::make_unique<TableApi<ncclNet_v11_t, 11>>(static_cast<const ncclNet_v11_t*>(table));
    case 10: return std::make_unique<TableApi<ncclNet_v10_t, 10>>(static_cast<const ncclNet_v10_t*>(table));
    case 9: return std::make_unique<TableApi<ncclNet_v9_t, 9>>(static_cast<const ncclNet_v9_t*>(table));
    case 8: return std::make_unique<TableApi<ncclNet_v8_t, 8>>(static_cast<const ncclNet_v8_t*>(table));
    default: return nullptr;
  }
}

}  // namespace trirace::net
