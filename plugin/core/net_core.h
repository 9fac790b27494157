// The version-neutral core of the TriRace net plugin. The exported ABI
// tables (plugin/abi/tables.cc) are thin adapters over this class; it
//  * checks every argument (null pointers, device indices, sizes, counts,
//    handles that are not live comms or requests of this plugin),
//  * owns the handles NCCL sees: comm handles from a HandleTable, request
//    handles that pack the comm slot, its generation and a per-request
//    sequence number, so calls on closed comms or finished requests fail
//    with ncclInvalidArgument instead of touching freed memory,
//  * enforces NCCL_NET_MAX_REQUESTS per comm (beyond: null request),
//  * accounts every posted and completed byte per device and traffic class
//    in the occupancy publisher,
//  * forwards to the Transport: TCP, or the wrapped plugin named by
//    TRIRACE_NET_INNER.
// Errors are absl::Status; the ABI layer maps them with ToNcclResult() and
// logs them once.
//
// Contexts: v11 init(ctx, commId, config) makes one Context per
// communicator; finalize(ctx) frees it. v10/v9/v8 use one process-wide
// context. Devices are enumerated once per process, on the first init.
// setNetAttr records the transfer hint (op) of the ctx; bytes posted
// afterwards on comms of that ctx are attributed to its traffic class:
// Send/Recv -> P2P, AllGather/AlltoAll/Gather/Scatter -> SPARSE,
// AllReduce/ReduceScatter/Reduce/Broadcast -> DENSE, no hint -> class 0.
//
// Files: net_core.cc (set-up, devices), transport_choice.h (the transport
// of this build), net_core_lifetime.cc (the process-wide core and its unload),
// net_core_contexts.cc, net_core_comms.cc, net_core_requests.cc (the data
// path and its byte accounting); core_objects.h (contexts, comms, requests),
// request_handle.h (the request handle's bit layout).
//
// Thread safety: thread-safe; calls on one comm must not be concurrent.
#ifndef TRIRACE_PLUGIN_CORE_NET_CORE_H_
#define TRIRACE_PLUGIN_CORE_NET_CORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/traffic_class.h"
#include "plugin/abi/net_abi.h"
#include "plugin/core/handle_table.h"
#include "plugin/core/transport.h"
#include "plugin/occupancy/publisher.h"

namespace trirace::net {

class NetCore {
 public:
  // The process-wide core used by the exported tables.
  static NetCore& Get();

  // Process-level initialisation (idempotent; a failure is sticky).
  absl::Status Init(const InitArgs& args);
  // v11: a context per communicator. `config` may be null.
  absl::Status InitContext(uint64_t comm_id, const ncclNetCommConfig_v11_t* config, void** ctx);
  absl::Status Finalize(void* ctx);
  absl::Status SetNetAttr(void* ctx, const ncclNetAttr_v11_t* attr);
  // The process-wide context of v8..v10.
  void* DefaultContext();

  absl::Status Devices(int* ndev);
  // The returned props stay valid (name/pciPath strings) for the process.
  absl::StatusOr<const DeviceProps*> Properties(int dev);
  absl::Status MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t* props);

  absl::Status Listen(void* ctx, int dev, void* handle, void** listen_comm);
  absl::Status Connect(void* ctx, int dev, const ncclNetCommConfig_v11_t* config, void* handle,
                       void** send_comm, ncclNetDeviceHandle_v11_t** send_dev_comm);
  absl::Status Accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** recv_dev_comm);

  absl::Status RegMr(void* comm, void* data, size_t size, int type, void** mhandle);
  absl::Status RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle);
  absl::Status DeregMr(void* comm, void* mhandle);

  absl::Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                     void** request);
  absl::Status Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                     void** phandles, void** request);
  absl::Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                      void** request);
  absl::Status Test(void* request, int* done, int* sizes);

  absl::Status CloseSend(void* send_comm);
  absl::Status CloseRecv(void* recv_comm);
  absl::Status CloseListen(void* listen_comm);

  absl::Status GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle);
  absl::Status IrecvConsumed(void* recv_comm, int n, void* request);

  // Runs when the library is unloaded (dlclose or exit): stops the threads
  // the core owns (the occupancy publisher) and frees the core when no comm
  // or context is left. Open comms must be closed before a dlclose.
  static void OnUnload();

  occupancy::OccupancyPublisher& publisher() { return publisher_; }

 private:
  struct Context;
  struct Comm;
  struct Request;
  enum class Kind { kListen, kSend, kRecv };

  NetCore();
  ~NetCore();
  absl::Status RequireInit();
  absl::StatusOr<Comm*> LookupComm(void* handle, Kind kind, const char* call);
  absl::StatusOr<Context*> LookupContext(void* ctx, const char* call);
  absl::Status CheckDev(int dev, const char* call);
  absl::StatusOr<void*> AddComm(std::unique_ptr<Comm> comm);
  absl::Status CloseComm(void* handle, Kind kind, const char* call);
  void* RequestHandle(const Comm& comm, int slot) const;
  // A free request slot of `comm`, marked busy; -1 when all are in use.
  static int AcquireSlot(Comm& comm);
  absl::StatusOr<std::pair<Comm*, Request*>> LookupRequest(void* handle);
  void RefreshDeviceProps() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Class priority: marks `comm`'s sockets (TOS, SO_PRIORITY) for class
  // `cls` when that differs from what they have.
  void ApplyClassPriority(Comm& comm, TrafficClass cls);

  absl::Mutex mu_;
  absl::Status init_status_ ABSL_GUARDED_BY(mu_);
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> ready_{false};
  // Set once by Init under mu_, then read without it (after ready_).
  std::unique_ptr<Transport> transport_;
  std::vector<std::unique_ptr<DeviceProps>> props_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> num_devices_{0};
  std::atomic<int> open_comms_{0};
  std::vector<std::unique_ptr<Context>> contexts_ ABSL_GUARDED_BY(mu_);
  Context* default_context_ = nullptr;
  HandleTable<Comm, 65536> comms_;
  occupancy::OccupancyPublisher publisher_;
  bool class_priority_ = false;  // TRIRACE_NET_CLASS_PRIORITY; set once by Init
};

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_NET_CORE_H_
