// The measured side: libnccl-net-trirace.so loaded by the shared loader
// (its ncclNetPlugin_v11 table) and driven like NCCL's proxy thread (post up to the window,
// test the oldest request).
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/plugin/bench_common.h"
#include "plugin/abi/net_abi.h"
#include "plugin/loader/net_plugin_loader.h"

namespace net_bench {
namespace {

struct Net {
  trirace::net::NetPlugin plugin;  // stays loaded: NCCL keeps its plugin too
  trirace::net::NetPluginApi* api = nullptr;
  void* ctx = nullptr;
};

bool Load(const Settings& s, Net* net) {
  setenv("TRIRACE_NET_IFNAME", "lo", 1);
  setenv("TRIRACE_NET_NSOCKS", std::to_string(s.nsocks).c_str(), 1);
  setenv("TRIRACE_NET_NTHREADS", std::to_string(s.nthreads).c_str(), 1);
  setenv("TRIRACE_NET_STRIPE_MIN_BYTES", std::to_string(s.stripe_min_bytes).c_str(), 1);
  absl::StatusOr<trirace::net::NetPlugin> loaded = trirace::net::LoadNetPlugin({s.plugin_path}, 11);
  if (!loaded.ok()) {
    fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return false;
  }
  net->plugin = *std::move(loaded);
  net->api = net->plugin.api.get();
  ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return net->api->Init(&net->ctx, 1, &config, nullptr, nullptr) == ncclSuccess;
}

// rank 0 listens (and receives), rank 1 connects (and sends).
bool OneWay(Net& net, int rank, Link& link, void** comm, void** listen_comm) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ncclNetDeviceHandle_v11_t* dev = nullptr;
  *comm = nullptr;
  if (rank == 0) {
    if (net.api->Listen(net.ctx, 0, handle, listen_comm) != ncclSuccess || !link.Send(handle, sizeof(handle))) {
      return false;
    }
    while (*comm == nullptr) {
      if (net.api->Accept(*listen_comm, comm, &dev) != ncclSuccess) return false;
      sched_yield();
    }
  } else {
    if (!link.Recv(handle, sizeof(handle))) return false;
    while (*comm == nullptr) {
      if (net.api->Connect(net.ctx, 0, nullptr, handle, comm, &dev) != ncclSuccess) return false;
      sched_yield();
    }
  }
  return true;
}

bool WaitDone(Net& net, void* req) {
  int done = 0;
  int sizes[NCCL_NET_MAX_REQUESTS];
  while (!done) {
    if (net.api->Test(req, &done, sizes) != ncclSuccess) return false;
    if (!done) sched_yield();  // as NCCL's proxy thread does when nothing progressed
  }
  return true;
}

}  // namespace

double PluginThroughput(int rank, Link& link, const Settings& s) {
  Net net;
  void* comm = nullptr;
  void* lc = nullptr;
  if (!Load(s, &net) || !OneWay(net, rank, link, &comm, &lc)) return -1;
  const uint64_t messages = s.total_bytes / s.message_bytes;
  std::vector<std::vector<char>> bufs(s.window, std::vector<char>(s.message_bytes, 1));
  std::vector<void*> reqs(s.window, nullptr);
  if (!link.Barrier()) return -1;
  double t0 = NowSeconds();
  uint64_t posted = 0, done = 0;
  while (done < messages) {
    while (posted < messages && posted - done < static_cast<uint64_t>(s.window)) {
      int slot = static_cast<int>(posted % s.window);
      void* data = bufs[slot].data();
      size_t size = s.message_bytes;
      int tag = 0;
      void* req = nullptr;
      ncclResult_t r = rank == 0 ? net.api->Irecv(comm, 1, &data, &size, &tag, nullptr, nullptr, &req)
                                 : net.api->Isend(comm, data, size, 0, nullptr, nullptr, &req);
      if (r != ncclSuccess) return -1;
      if (req == nullptr) break;
      reqs[slot] = req;
      ++posted;
    }
    int finished = 0;
    int sizes[NCCL_NET_MAX_REQUESTS];
    if (net.api->Test(reqs[done % s.window], &finished, sizes) != ncclSuccess) return -1;
    if (finished) {
      ++done;
    } else {
      sched_yield();  // as NCCL's proxy thread does when nothing progressed
    }
  }
  double t1 = NowSeconds();
  link.Barrier();
  if (rank == 0) {
    net.api->CloseRecv(comm);
    net.api->CloseListen(lc);
  } else {
    net.api->CloseSend(comm);
  }
  return static_cast<double>(messages * s.message_bytes) / (t1 - t0) / 1e9;
}

double PluginRoundTrip(int rank, Link& link, const Settings& s) {
  Net net;
  if (!Load(s, &net)) return -1;
  // Two one-way comms: 0 -> 1 and 1 -> 0.
  void* recv_comm = nullptr;
  void* send_comm = nullptr;
  void* lc = nullptr;
  void* lc2 = nullptr;
  if (!OneWay(net, rank, link, rank == 0 ? &recv_comm : &send_comm, &lc)) return -1;
  if (!OneWay(net, 1 - rank, link, rank == 0 ? &send_comm : &recv_comm, &lc2)) return -1;
  char out[8] = {}, in[8] = {};
  const int warmup = s.iterations / 10;
  double t0 = 0;
  for (int i = 0; i < warmup + s.iterations; ++i) {
    if (i == warmup) t0 = NowSeconds();
    for (int step = 0; step < 2; ++step) {
      bool sending = (step == 0) == (rank == 0);
      void* req = nullptr;
      while (req == nullptr) {
        void* data = in;
        size_t size = sizeof(in);
        int tag = 0;
        ncclResult_t r = sending ? net.api->Isend(send_comm, out, sizeof(out), 0, nullptr, nullptr, &req)
                                 : net.api->Irecv(recv_comm, 1, &data, &size, &tag, nullptr, nullptr, &req);
        if (r != ncclSuccess) return -1;
      }
      if (!WaitDone(net, req)) return -1;
    }
  }
  double t1 = NowSeconds();
  link.Barrier();
  net.api->CloseSend(send_comm);
  net.api->CloseRecv(recv_comm);
  net.api->CloseListen(lc ? lc : lc2);
  return (t1 - t0) / s.iterations * 1e6;
}

}  // namespace net_bench
