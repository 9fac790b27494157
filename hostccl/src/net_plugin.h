// NetPlugin: an NCCL net plugin loaded the way NCCL 2.28 loads one, behind
// one version-neutral interface.
//
// Lookup (NetPlugin::Get, once per process):
//   NCCL_NET_PLUGIN set     comma list; each name is tried as given (a path
//                           works), then as libnccl-net-<name>.so; "none" is
//                           an error (hostccl has no internal transport)
//   NCCL_NET_PLUGIN unset   the project's TCP plugin: libnccl-net-trirace.so
//                           in ../ (install: <libdir>/hostccl/..), ../../lib
//                           (build tree: <build>/hostccl/lib -> <build>/lib)
//                           and ./ relative to the folder holding hostccl's
//                           libnccl.so.2, then the normal dlopen search
// Loading and the version adaptation are the shared loader's
// (plugin/loader/net_plugin_loader.h): in each library the newest table
// wins, adapted once to the v11 calls. The first library whose init
// succeeds with at least one device is used.
//
// Contexts: one per communicator (InitContext with the communicator id and
// traffic class); for tables older than v11 the loader's adapter keeps them.
//
// Thread safety: Get() is thread-safe; the data-path calls follow the
// plugin's own rules (one thread per comm at a time).
#ifndef TRIRACE_HOSTCCL_SRC_NET_PLUGIN_H_
#define TRIRACE_HOSTCCL_SRC_NET_PLUGIN_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "plugin/loader/net_plugin_loader.h"

namespace trirace::hostccl {

struct NetDeviceInfo {
  std::string name;
  int ptr_support = 0;
  size_t max_message_bytes = 0;  // min of maxP2pBytes and maxCollBytes (v9+)
};

class NetPlugin {
 public:
  // The process's plugin, loaded on first call; the error explains what was
  // tried.
  static absl::StatusOr<NetPlugin*> Get();

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  int version() const { return version_; }
  NetDeviceInfo device() const { return device_; }

  absl::StatusOr<void*> InitContext(uint64_t comm_id, int traffic_class);
  void FinalizeContext(void* ctx);

  absl::Status Listen(void* ctx, void* handle, void** listen_comm);
  // *send_comm stays nullptr while the connection is not up yet.
  absl::Status Connect(void* ctx, int traffic_class, void* handle, void** send_comm);
  absl::Status Accept(void* listen_comm, void** recv_comm);
  absl::Status RegMr(void* comm, void* data, size_t size, void** mhandle);
  void DeregMr(void* comm, void* mhandle);
  absl::Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void** request);
  absl::Status Irecv(void* recv_comm, void* data, size_t size, int tag, void* mhandle, void** request);
  absl::Status Test(void* request, bool* done, size_t* size);
  // A hint: the transfers that follow on `ctx` serve NCCL function
  // `nccl_func` (net_abi.h TRIRACE_NCCL_FUNC_*).
  void SetTransferFunc(void* ctx, int nccl_func);
  void CloseSend(void* comm);
  void CloseRecv(void* comm);
  void CloseListen(void* comm);

 private:
  NetPlugin() = default;
  static absl::StatusOr<NetPlugin*> Load();
  absl::Status Initialize();

  net::NetPlugin loaded_;
  net::NetPluginApi* api_ = nullptr;
  std::string path_;
  std::string name_;
  int version_ = 0;
  int dev_ = 0;
  NetDeviceInfo device_;
};

// Maps a plugin's result to a status naming the call.
absl::Status PluginStatus(ncclResult_t result, const char* call);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_NET_PLUGIN_H_
