// The one loader of NCCL net plugins in TriRace: finds a plugin library the
// way NCCL does, takes the newest function table it exports (or the version
// asked for) and adapts it, once, at load, to NetPluginApi: the v11 calls.
// Callers never branch on the version again. Used by hostccl (the plugin its
// peer links run over), the net plugin's wrapper mode (the inner plugin), the
// plugin test harness and the plugin benchmark.
//
// Older tables are adapted as NCCL adapts them to its newest:
//   v10: no per-communicator context. The first Init initialises the plugin
//        (init(logger, profiler)); every Init returns a context the adapter
//        owns, which keeps the comm config so that Connect can pass its
//        traffic class (v10's connect takes the config); Finalize frees it,
//        and the adapter frees those never finalized (NCCL has no finalize
//        below v11).
//   v9:  as v10, and connect takes no config; isend/irecv take no phandle(s).
//   v8:  as v9, with int sizes (a size above INT_MAX is ncclInvalidArgument),
//        no virtual NICs, and properties without vProps and message limits
//        (one physical device each; NCCL's limits for a v8 plugin).
// Optional functions a table leaves NULL: GetDeviceMr gives a NULL handle,
// IrecvConsumed and SetNetAttr do nothing (both are hints), RegMrDmaBuf and
// MakeVDevice are ncclInvalidUsage.
//
// Lookup (LoadNetPlugin): each name is tried as given (a path works), then,
// if it has no '/', as libnccl-net-<name>.so; in each library the tables
// ncclNetPlugin_v11, v10, v9, v8 are tried in that order.
//
// Thread safety: loading is not thread-safe (call it once, under the
// caller's own once-flag); a loaded NetPluginApi follows the plugin's rules
// (any thread; one thread per comm at a time). The library stays loaded for
// the life of the process unless the NetPlugin is released with Unload().
#ifndef TRIRACE_PLUGIN_LOADER_NET_PLUGIN_LOADER_H_
#define TRIRACE_PLUGIN_LOADER_NET_PLUGIN_LOADER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin/abi/net_abi.h"

namespace trirace::net {

class NetPluginApi {
 public:
  virtual ~NetPluginApi() = default;

  int version() const { return version_; }
  const std::string& name() const { return name_; }
  // The table as exported (ncclNet_vN_t*), for code that tests the ABI itself.
  const void* raw_table() const { return table_; }

  // ctx: v11's per-communicator context, or the adapter's (older tables).
  // `config` may be null (traffic class undefined).
  virtual ncclResult_t Init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                            ncclDebugLogger_t logger, ncclProfilerCallback_t profiler) = 0;
  virtual ncclResult_t Finalize(void* ctx) = 0;
  virtual ncclResult_t Devices(int* ndev) = 0;
  virtual ncclResult_t GetProperties(int dev, ncclNetProperties_v11_t* props) = 0;
  virtual ncclResult_t MakeVDevice(int* dev, ncclNetVDeviceProps_v11_t* props) = 0;
  virtual ncclResult_t SetNetAttr(void* ctx, ncclNetAttr_v11_t* attr) = 0;

  virtual ncclResult_t Listen(void* ctx, int dev, void* handle, void** listen_comm) = 0;
  // `config` overrides the context's for tables whose connect takes one
  // (v10; a v11 plugin takes it from the context); null: the context's.
  virtual ncclResult_t Connect(void* ctx, int dev, ncclNetCommConfig_v11_t* config, void* handle,
                               void** send_comm, ncclNetDeviceHandle_v11_t** dev_comm) = 0;
  virtual ncclResult_t Accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** dev_comm) = 0;

  virtual ncclResult_t RegMr(void* comm, void* data, size_t size, int type, void** mhandle) = 0;
  virtual ncclResult_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                   void** mhandle) = 0;
  virtual ncclResult_t DeregMr(void* comm, void* mhandle) = 0;
  virtual ncclResult_t GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) = 0;

  virtual ncclResult_t Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                             void** request) = 0;
  virtual ncclResult_t Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                             void** phandles, void** request) = 0;
  virtual ncclResult_t Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                              void** request) = 0;
  virtual ncclResult_t Test(void* request, int* done, int* sizes) = 0;
  virtual ncclResult_t IrecvConsumed(void* recv_comm, int n, void* request) = 0;

  virtual ncclResult_t CloseSend(void* send_comm) = 0;
  virtual ncclResult_t CloseRecv(void* recv_comm) = 0;
  virtual ncclResult_t CloseListen(void* listen_comm) = 0;

 protected:
  NetPluginApi(int version, std::string name, const void* table)
      : version_(version), name_(std::move(name)), table_(table) {}

 private:
  const int version_;
  const std::string name_;
  const void* const table_;
};

// A loaded library and its adapted table.
struct NetPlugin {
  std::string path;  // the name dlopen succeeded with
  void* handle = nullptr;
  std::unique_ptr<NetPluginApi> api;

  // dlcloses the library (tests that check unloading); `api` is gone too.
  void Unload();
};

// Adapts the table of version `version` (8 to 11) at `table`.
std::unique_ptr<NetPluginApi> AdaptNetTable(const void* table, int version);

// Loads the first of `names` that opens and exports a table (newest first;
// only ncclNetPlugin_v<version> when `version` is not 0). The error lists
// every name tried and why it failed.
absl::StatusOr<NetPlugin> LoadNetPlugin(const std::vector<std::string>& names, int version = 0);

// The file names NCCL tries for one NCCL_NET_PLUGIN entry: as given, then
// libnccl-net-<name>.so when it has no '/'.
std::vector<std::string> NetPluginFileNames(const std::string& name);

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_LOADER_NET_PLUGIN_LOADER_H_
