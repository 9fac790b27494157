// The interface between the plugin core and what actually moves bytes: the
// TCP transport (plugin/transport/tcp) or another net plugin (plugin/wrap).
//
// The core (plugin/core/net_core.h) has already checked every argument,
// owns the NCCL-visible handles and requests and does the byte accounting;
// a transport sees only valid calls on its own objects:
//  * comms and requests are the transport's opaque pointers;
//  * Isend/Irecv may return a null request: "retry later";
//  * Test fills sizes[0..n) when done;
//  * every call may come from any thread, but calls on one comm are not
//    concurrent (NCCL drives a comm from its proxy thread).
// Errors use the codes of common/status.h (RemoteError for a lost peer,
// SystemError for local OS failures, ...).
#ifndef TRIRACE_PLUGIN_CORE_TRANSPORT_H_
#define TRIRACE_PLUGIN_CORE_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugin/abi/net_abi.h"

namespace trirace::net {

// Version-neutral device properties (the union of what v8..v11 report).
struct DeviceProps {
  std::string name;
  std::string pci_path;
  uint64_t guid = 0;
  int ptr_support = NCCL_PTR_HOST;
  int reg_is_global = 0;
  int force_flush = 0;
  int speed_mbps = 0;
  int port = 0;
  float latency_us = 0;
  int max_comms = 0;
  int max_recvs = 1;
  int net_device_type = NCCL_NET_DEVICE_HOST;
  int net_device_version = NCCL_NET_DEVICE_INVALID_VERSION;
  ncclNetVDeviceProps_v11_t vprops{};
  size_t max_p2p_bytes = 0;
  size_t max_coll_bytes = 0;
  int max_multi_request_size = 1;
};

// Per-comm settings from the v11 init config or the v10 connect config.
struct CommConfig {
  int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
};

// What init passes down (once per process).
struct InitArgs {
  ncclDebugLogger_t logger = nullptr;
  ncclProfilerCallback_t profiler = nullptr;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Enumerates devices; called once per process before anything else.
  virtual absl::Status Init(const InitArgs& args) = 0;
  virtual int NumDevices() const = 0;
  virtual absl::StatusOr<DeviceProps> Properties(int dev) const = 0;
  // Merges devices into a virtual NIC; `*dev` receives its index.
  virtual absl::Status MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t& props) = 0;

  // Per-communicator context (v11). The TCP transport keeps none; the
  // wrapper creates the inner plugin's. `inner_ctx` may stay null.
  virtual absl::Status InitContext(uint64_t comm_id, const CommConfig& config, void** inner_ctx) = 0;
  virtual absl::Status FinalizeContext(void* inner_ctx) = 0;
  virtual absl::Status SetNetAttr(void* inner_ctx, const ncclNetAttr_v11_t& attr) = 0;

  // The handle buffer is NCCL_NET_HANDLE_MAXSIZE bytes.
  virtual absl::Status Listen(void* inner_ctx, int dev, void* handle, void** listen_comm) = 0;
  // Non-blocking: *send_comm stays null until the connection is complete.
  // `dev_comm` is NCCL's device-offload handle pointer, passed through.
  virtual absl::Status Connect(void* inner_ctx, int dev, const CommConfig& config, void* handle,
                               void** send_comm, ncclNetDeviceHandle_v11_t** dev_comm) = 0;
  virtual absl::Status Accept(void* listen_comm, void** recv_comm,
                              ncclNetDeviceHandle_v11_t** dev_comm) = 0;

  virtual absl::Status RegMr(void* comm, void* data, size_t size, int type, void** mhandle) = 0;
  virtual absl::Status RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                   int fd, void** mhandle) = 0;
  virtual absl::Status DeregMr(void* comm, void* mhandle) = 0;

  virtual absl::Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                             void* phandle, void** request) = 0;
  // `*request` may hold NCCL_NET_OPTIONAL_RECV_COMPLETION on entry.
  virtual absl::Status Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                             void** mhandles, void** phandles, void** request) = 0;
  virtual absl::Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                              void** request) = 0;
  // `sizes` has room for NCCL_NET_MAX_REQUESTS entries.
  virtual absl::Status Test(void* request, int* done, int* sizes) = 0;

  // Marks what `send_comm` sends from now on with IP TOS `tos` and socket
  // priority `priority` (class priority, traffic_class.h). Unimplemented
  // when the transport cannot.
  virtual absl::Status SetSendClass(void* send_comm, int tos, int priority) = 0;
  // The same for what `recv_comm` sends back (TCP's acknowledgements).
  virtual absl::Status SetRecvClass(void* recv_comm, int tos, int priority) = 0;

  virtual absl::Status CloseSend(void* send_comm) = 0;
  virtual absl::Status CloseRecv(void* recv_comm) = 0;
  virtual absl::Status CloseListen(void* listen_comm) = 0;

  virtual absl::Status GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) = 0;
  virtual absl::Status IrecvConsumed(void* recv_comm, int n, void* request) = 0;
};

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_TRANSPORT_H_
