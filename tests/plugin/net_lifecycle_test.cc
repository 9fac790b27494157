// Loading and unloading the plugin as NCCL does: NCCL 2.28 dlcloses a net
// plugin after the last communicator is finalized, and loads it again for
// the next one.
#include <dirent.h>
#include <dlfcn.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"

namespace net_test {
namespace {

void SendOne(NetPlugin& net, void* comm, void* data, size_t size, int tag) {
  void* req = nullptr;
  while (req == nullptr) ASSERT_EQ(net.Isend(comm, data, size, tag, nullptr, &req), ncclSuccess);
  ASSERT_EQ(net.Wait(req), ncclSuccess);
}

int RecvOne(NetPlugin& net, void* comm, void* data, size_t capacity, int tag) {
  void* req = nullptr;
  size_t size = capacity;
  while (req == nullptr) {
    if (net.Irecv(comm, 1, &data, &size, &tag, nullptr, &req) != ncclSuccess) return -1;
  }
  int sizes[NCCL_NET_MAX_REQUESTS] = {-1};
  EXPECT_EQ(net.Wait(req, sizes), ncclSuccess);
  return sizes[0];
}

int CountThreads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// NCCL dlcloses a net plugin after the last communicator is finalized;
// nothing of the plugin may keep running, and loading it again works.
TEST(NetPluginLifecycle, UnloadAfterUseAndLoadAgain) {
  auto codes = RunRanks(BaseEnv("unload"), [](int rank, Channel& peer, Channel&) {
    const int base_threads = CountThreads();
    for (int round = 0; round < 2; ++round) {
      void* dl = dlopen(PluginPath(), RTLD_NOW | RTLD_LOCAL);
      ASSERT_NE(dl, nullptr) << dlerror();
      {
        Pair p = Pair::Connect(PluginPath(), 11, rank, peer);  // same handle: refcount 2
        ASSERT_TRUE(p.ok);
        std::vector<char> storage(1 << 20);
        char* buf = storage.data();
        if (rank == 1) {
          FillPattern(buf, 1 << 20, round);
          SendOne(*p.net, p.send_comm, buf, 1 << 20, 0);  // starts progress threads
        } else {
          EXPECT_EQ(RecvOne(*p.net, p.recv_comm, buf, 1 << 20, 0), 1 << 20);
          EXPECT_TRUE(CheckPattern(buf, 1 << 20, round));
        }
        EXPECT_TRUE(peer.Barrier());
        p.Close();
        EXPECT_EQ(p.net->Finalize(), ncclSuccess);
        p.net->Unload();
      }
      ASSERT_EQ(dlclose(dl), 0);
      // Joined threads all; the kernel may list one a moment past its join.
      int threads = CountThreads();
      for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
           threads != base_threads && std::chrono::steady_clock::now() < until; threads = CountThreads()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      EXPECT_EQ(threads, base_threads) << "round " << round << ": threads left after unload";
    }
  });
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
}

}  // namespace
}  // namespace net_test
