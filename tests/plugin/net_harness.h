// Test harness for the net plugin: loads a plugin .so with dlopen and drives
// it through one of its exported tables the way NCCL's proxy thread does
// (connect/accept called until they return a comm, requests tested until
// done), and runs ranks as forked processes that talk over a socketpair.
//
//   RunRanks({{"TRIRACE_NET_IFNAME", "lo"}}, [&](int rank, Channel& peer, Channel& parent) {
//     auto net = NetPlugin::Load(kPluginPath, 11);
//     ...
//   });
//
// Each rank is a child process: the gtest process itself never loads the
// plugin (its threads would not survive a fork). A rank reports failure
// through gtest expectations; its exit status carries them to the parent.
#ifndef TRIRACE_TESTS_PLUGIN_NET_HARNESS_H_
#define TRIRACE_TESTS_PLUGIN_NET_HARNESS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plugin/abi/net_abi.h"
#include "plugin/loader/net_plugin_loader.h"

namespace net_test {

// A blocking byte channel between two ranks (one end of a socketpair).
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  // Both return false on EOF, error or after timeout_ms.
  bool Send(const void* data, size_t len);
  bool Recv(void* data, size_t len, int timeout_ms = 60000);
  bool SendU64(uint64_t v) { return Send(&v, sizeof(v)); }
  uint64_t RecvU64(int timeout_ms = 60000);  // 0 on failure
  // Both ranks reach this point.
  bool Barrier();

 private:
  int fd_;
};

using Env = std::vector<std::pair<std::string, std::string>>;
// `peer`: the channel to the other rank; `parent`: to the test process.
using RankFn = std::function<void(int rank, Channel& peer, Channel& parent)>;
// Runs in the test process while the ranks run; channels[r] talks to rank r.
using ParentFn = std::function<void(const std::vector<pid_t>& pids, std::vector<Channel*>& channels)>;

// Forks two rank processes, applies `env` in each, runs fn(rank, ...) and
// waits up to timeout_ms for both (then kills them). Returns each rank's exit
// status (128 + signal number when killed by a signal).
std::vector<int> RunRanks(const Env& env, const RankFn& fn, const ParentFn& parent = nullptr,
                          int timeout_ms = 120000);

// Runs fn in one forked process (for single-process checks); its exit status.
int RunInChild(const Env& env, const std::function<void()>& fn, int timeout_ms = 120000);

// A loaded plugin driven through the table of one version.
class NetPlugin {
 public:
  // version 0 picks the newest table the library exports. Loaded and
  // adapted to the v11 calls by the shared loader (plugin/loader).
  static std::unique_ptr<NetPlugin> Load(const std::string& path, int version);
  ~NetPlugin();
  // dlcloses the library (like NCCL after the last communicator); the
  // object must not be used afterwards.
  void Unload();

  int version() const { return version_; }
  const char* name() const;

  // `logger` null: one that prints "[nccl-log] ..." to stderr.
  ncclResult_t Init(uint64_t comm_id = 1, int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF,
                    ncclDebugLogger_t logger = nullptr);
  ncclResult_t Finalize();  // the context of Init (the loader's adapter below v11)
  ncclResult_t Devices(int* ndev);
  // Normalised to the v11 struct by the loader's adapter.
  ncclResult_t GetProperties(int dev, ncclNetProperties_v11_t* props);
  ncclResult_t Listen(int dev, void* handle, void** listen_comm);
  ncclResult_t Connect(int dev, void* handle, void** send_comm);  // one call
  ncclResult_t Accept(void* listen_comm, void** recv_comm);      // one call
  ncclResult_t RegMr(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t DeregMr(void* comm, void* mhandle);
  ncclResult_t Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void** request);
  ncclResult_t Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                     void** request);
  ncclResult_t Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t Test(void* request, int* done, int* sizes);
  ncclResult_t CloseSend(void* c);
  ncclResult_t CloseRecv(void* c);
  ncclResult_t CloseListen(void* c);
  ncclResult_t SetNetAttrOp(uint32_t op_mask);  // v11 only
  ncclResult_t MakeVDevice(int* dev, ncclNetVDeviceProps_v11_t* props);  // v9+

  // NCCL-style loops, bounded by timeout_ms (then ncclInternalError).
  ncclResult_t ConnectLoop(int dev, void* handle, void** send_comm, int timeout_ms = 30000);
  ncclResult_t AcceptLoop(void* listen_comm, void** recv_comm, int timeout_ms = 30000);
  ncclResult_t Wait(void* request, int* sizes = nullptr, int timeout_ms = 60000);

 private:
  NetPlugin() = default;
  trirace::net::NetPlugin loaded_;  // the shared loader's (plugin/loader)
  trirace::net::NetPluginApi* api_ = nullptr;
  int version_ = 0;
  void* ctx_ = nullptr;
};

// The paths compiled in by CMake.
const char* PluginPath();
const char* InnerPluginPath();

// A job id unique to this test process (for the occupancy segment name).
std::string UniqueJobId(const std::string& tag);

// Deterministic bytes for message `seed`.
void FillPattern(void* data, size_t len, uint32_t seed);
bool CheckPattern(const void* data, size_t len, uint32_t seed);

// The sockets this process has open, each as "fd->socket:[inode]", in fd
// order. Sockets are all the plugin's comms own; other descriptors are left
// out because the sanitizers' runtimes open and close pipes on threads that
// start at any time, which would make a plain count racy.
std::vector<std::string> OpenSockets();

}  // namespace net_test

#endif  // TRIRACE_TESTS_PLUGIN_NET_HARNESS_H_
