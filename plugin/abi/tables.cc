// The exported net plugin tables, ncclNetPlugin_v11/_v10/_v9/_v8. Each entry
// is a thin adapter: convert the version's types, call the NetCore, and map
// the status to ncclResult_t in one place (Run), catching every exception.
#include <cstring>
#include <exception>
#include <new>

#include "common/export.h"
#include "common/logging.h"
#include "nccl_adapter/nccl_result.h"
#include "plugin/abi/net_abi.h"
#include "plugin/core/net_core.h"
#include "plugin/transport/tcp/wire.h"

namespace trirace::net {
namespace {

static_assert(sizeof(tcp::ConnectHandle) <= NCCL_NET_HANDLE_MAXSIZE,
              "the connection handle must fit NCCL_NET_HANDLE_MAXSIZE");

constexpr const char kName[] = "TriRace";

template <typename F>
ncclResult_t Run(const char* call, F&& fn) noexcept {
  try {
    absl::Status st = fn();
    if (st.ok()) return ncclSuccess;
    TRIRACE_WARN(NET, "%s: %s", call, st.ToString());
    return ToNcclResult(st);
  } catch (const std::bad_alloc&) {
    TRIRACE_WARN(NET, "%s: out of memory", call);
    return ncclSystemError;
  } catch (const std::exception& e) {
    TRIRACE_WARN(NET, "%s: internal error: %s", call, e.what());
    return ncclInternalError;
  } catch (...) {
    TRIRACE_WARN(NET, "%s: internal error (unknown exception)", call);
    return ncclInternalError;
  }
}

NetCore& Core() { return NetCore::Get(); }

template <typename Props>
void FillCommon(const DeviceProps& p, Props* out) {
  std::memset(out, 0, sizeof(*out));
  out->name = const_cast<char*>(p.name.c_str());
  out->pciPath = p.pci_path.empty() ? nullptr : const_cast<char*>(p.pci_path.c_str());
  out->guid = p.guid;
  out->ptrSupport = p.ptr_support;
  out->regIsGlobal = p.reg_is_global;
  out->speed = p.speed_mbps;
  out->port = p.port;
  out->latency = p.latency_us;
  out->maxComms = p.max_comms;
  out->maxRecvs = p.max_recvs;
  out->netDeviceType = static_cast<ncclNetDeviceType>(p.net_device_type);
  out->netDeviceVersion = p.net_device_version;
}

template <typename Props>
void FillV9Plus(const DeviceProps& p, Props* out) {
  FillCommon(p, out);
  out->forceFlush = p.force_flush;
  out->vProps = p.vprops;
  out->maxP2pBytes = p.max_p2p_bytes;
  out->maxCollBytes = p.max_coll_bytes;
}

template <typename Props, typename Fill>
ncclResult_t GetProps(int dev, Props* props, Fill fill) {
  return Run("getProperties", [&]() -> absl::Status {
    if (props == nullptr) return absl::InvalidArgumentError("getProperties: props is NULL");
    auto p = Core().Properties(dev);
    if (!p.ok()) return p.status();
    fill(**p, props);
    return absl::OkStatus();
  });
}

// ---- entries shared by several versions ----------------------------------

ncclResult_t Devices(int* ndev) { return Run("devices", [&] { return Core().Devices(ndev); }); }
ncclResult_t Accept(void* l, void** r, ncclNetDeviceHandle_v11_t** d) {
  return Run("accept", [&] { return Core().Accept(l, r, d); });
}
ncclResult_t RegMr(void* c, void* data, size_t size, int type, void** mh) {
  return Run("regMr", [&] { return Core().RegMr(c, data, size, type, mh); });
}
ncclResult_t RegMrDmaBuf(void* c, void* data, size_t size, int type, uint64_t off, int fd, void** mh) {
  return Run("regMrDmaBuf", [&] { return Core().RegMrDmaBuf(c, data, size, type, off, fd, mh); });
}
ncclResult_t DeregMr(void* c, void* mh) { return Run("deregMr", [&] { return Core().DeregMr(c, mh); }); }
ncclResult_t Isend(void* c, void* data, size_t size, int tag, void* mh, void* ph, void** req) {
  return Run("isend", [&] { return Core().Isend(c, data, size, tag, mh, ph, req); });
}
ncclResult_t Irecv(void* c, int n, void** data, size_t* sizes, int* tags, void** mh, void** ph,
                   void** req) {
  return Run("irecv", [&] { return Core().Irecv(c, n, data, sizes, tags, mh, ph, req); });
}
ncclResult_t Iflush(void* c, int n, void** data, int* sizes, void** mh, void** req) {
  return Run("iflush", [&] { return Core().Iflush(c, n, data, sizes, mh, req); });
}
ncclResult_t Test(void* req, int* done, int* sizes) {
  return Run("test", [&] { return Core().Test(req, done, sizes); });
}
ncclResult_t CloseSend(void* c) { return Run("closeSend", [&] { return Core().CloseSend(c); }); }
ncclResult_t CloseRecv(void* c) { return Run("closeRecv", [&] { return Core().CloseRecv(c); }); }
ncclResult_t CloseListen(void* c) { return Run("closeListen", [&] { return Core().CloseListen(c); }); }
ncclResult_t GetDeviceMr(void* c, void* mh, void** dptr) {
  return Run("getDeviceMr", [&] { return Core().GetDeviceMr(c, mh, dptr); });
}
ncclResult_t IrecvConsumed(void* c, int n, void* req) {
  return Run("irecvConsumed", [&] { return Core().IrecvConsumed(c, n, req); });
}
ncclResult_t MakeVDevice(int* d, ncclNetVDeviceProps_v11_t* props) {
  return Run("makeVDevice", [&] { return Core().MakeVDevice(d, props); });
}

// ---- v11 -------------------------------------------------------------------

ncclResult_t InitV11(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                     ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn) {
  return Run("init", [&]() -> absl::Status {
    TRIRACE_RETURN_IF_ERROR(Core().Init({log_fn, prof_fn}));
    return Core().InitContext(comm_id, config, ctx);
  });
}
ncclResult_t GetPropsV11(int dev, ncclNetProperties_v11_t* props) {
  return GetProps(dev, props, [](const DeviceProps& p, ncclNetProperties_v11_t* out) {
    FillV9Plus(p, out);
    out->maxMultiRequestSize = p.max_multi_request_size;
  });
}
ncclResult_t ListenV11(void* ctx, int dev, void* handle, void** l) {
  return Run("listen", [&] { return Core().Listen(ctx, dev, handle, l); });
}
ncclResult_t ConnectV11(void* ctx, int dev, void* handle, void** s, ncclNetDeviceHandle_v11_t** d) {
  return Run("connect", [&] { return Core().Connect(ctx, dev, nullptr, handle, s, d); });
}
ncclResult_t FinalizeV11(void* ctx) { return Run("finalize", [&] { return Core().Finalize(ctx); }); }
ncclResult_t SetNetAttrV11(void* ctx, ncclNetAttr_v11_t* attr) {
  return Run("setNetAttr", [&] { return Core().SetNetAttr(ctx, attr); });
}

// ---- v10 -------------------------------------------------------------------

ncclResult_t InitV10(ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn) {
  return Run("init", [&] { return Core().Init({log_fn, prof_fn}); });
}
ncclResult_t GetPropsV10(int dev, ncclNetProperties_v10_t* props) {
  return GetProps(dev, props, [](const DeviceProps& p, ncclNetProperties_v10_t* out) { FillV9Plus(p, out); });
}
ncclResult_t ListenV10(int dev, void* handle, void** l) {
  return Run("listen", [&] { return Core().Listen(nullptr, dev, handle, l); });
}
ncclResult_t ConnectV10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** s,
                        ncclNetDeviceHandle_v10_t** d) {
  return Run("connect", [&] { return Core().Connect(nullptr, dev, config, handle, s, d); });
}

// ---- v9 --------------------------------------------------------------------

ncclResult_t InitV9(ncclDebugLogger_t log_fn) {
  return Run("init", [&] { return Core().Init({log_fn, nullptr}); });
}
ncclResult_t ConnectV9(int dev, void* handle, void** s, ncclNetDeviceHandle_v9_t** d) {
  return Run("connect", [&] { return Core().Connect(nullptr, dev, nullptr, handle, s, d); });
}
ncclResult_t IsendV9(void* c, void* data, size_t size, int tag, void* mh, void** req) {
  return Isend(c, data, size, tag, mh, nullptr, req);
}
ncclResult_t IrecvV9(void* c, int n, void** data, size_t* sizes, int* tags, void** mh, void** req) {
  return Irecv(c, n, data, sizes, tags, mh, nullptr, req);
}

// ---- v8 --------------------------------------------------------------------

ncclResult_t GetPropsV8(int dev, ncclNetProperties_v8_t* props) {
  return GetProps(dev, props, [](const DeviceProps& p, ncclNetProperties_v8_t* out) { FillCommon(p, out); });
}
ncclResult_t IsendV8(void* c, void* data, int size, int tag, void* mh, void** req) {
  if (size < 0) {
    TRIRACE_WARN(NET, "isend: size=%d is negative", size);
    return ncclInvalidArgument;
  }
  return Isend(c, data, static_cast<size_t>(size), tag, mh, nullptr, req);
}
ncclResult_t IrecvV8(void* c, int n, void** data, int* sizes, int* tags, void** mh, void** req) {
  size_t wide[NCCL_NET_MAX_REQUESTS];
  if (n < 1 || n > NCCL_NET_MAX_REQUESTS || sizes == nullptr) {
    TRIRACE_WARN(NET, "irecv: n=%d or sizes=%p not accepted", n, static_cast<void*>(sizes));
    return ncclInvalidArgument;
  }
  for (int i = 0; i < n; ++i) {
    if (sizes[i] < 0) {
      TRIRACE_WARN(NET, "irecv: sizes[%d]=%d is negative", i, sizes[i]);
      return ncclInvalidArgument;
    }
    wide[i] = static_cast<size_t>(sizes[i]);
  }
  return Irecv(c, n, data, wide, tags, mh, nullptr, req);
}

}  // namespace
}  // namespace trirace::net

using namespace trirace::net;  // NOLINT: the tables below name the adapters

extern "C" TRIRACE_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    kName,       InitV11,     Devices,     GetPropsV11, ListenV11,     ConnectV11,    Accept,
    RegMr,       RegMrDmaBuf, DeregMr,     Isend,       Irecv,         Iflush,        Test,
    CloseSend,   CloseRecv,   CloseListen, GetDeviceMr, IrecvConsumed, MakeVDevice,   FinalizeV11,
    SetNetAttrV11,
};

extern "C" TRIRACE_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    kName,     InitV10,     Devices,     GetPropsV10, ListenV10,     ConnectV10, Accept,
    RegMr,     RegMrDmaBuf, DeregMr,     Isend,       Irecv,         Iflush,     Test,
    CloseSend, CloseRecv,   CloseListen, GetDeviceMr, IrecvConsumed, MakeVDevice,
};

extern "C" TRIRACE_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    kName,     InitV9,      Devices,     GetPropsV10, ListenV10,     ConnectV9, Accept,
    RegMr,     RegMrDmaBuf, DeregMr,     IsendV9,     IrecvV9,       Iflush,    Test,
    CloseSend, CloseRecv,   CloseListen, GetDeviceMr, IrecvConsumed, MakeVDevice,
};

extern "C" TRIRACE_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    kName,     InitV9,      Devices,     GetPropsV8,  ListenV10,     ConnectV9, Accept,
    RegMr,     RegMrDmaBuf, DeregMr,     IsendV8,     IrecvV8,       Iflush,    Test,
    CloseSend, CloseRecv,   CloseListen, GetDeviceMr, IrecvConsumed,
};
