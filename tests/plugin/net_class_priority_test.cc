// Class priority (TRIRACE_NET_CLASS_PRIORITY): when it is on, a send comm's
// sockets take the SO_PRIORITY of the class of what it sends (P2P 6,
// SPARSE 0, DENSE 1), so a priority qdisc serves pipeline traffic first;
// when it is off, or the comm has an explicit trafficClass, they keep
// theirs. Ranks are processes: rank 1 sends, rank 0 receives.
#include <netinet/in.h>
#include <sys/socket.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"

namespace net_test {
namespace {

struct Setting {
  const char* name;
  Env env;       // on top of BaseEnv
  bool enabled;  // class priority expected on
};

struct Op {
  const char* name;
  int func;      // TRIRACE_NCCL_FUNC_*
  int priority;  // expected SO_PRIORITY when enabled
};

const Setting kSettings[] = {
    {"on", {{"TRIRACE_NET_CLASS_PRIORITY", "on"}}, true},
    {"off", {{"TRIRACE_NET_CLASS_PRIORITY", "off"}, {"TRIRACE_MODE", "schedule"}}, false},
    {"auto_trirace", {{"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "trirace"}}, true},
    {"auto_priority", {{"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "priority"}}, false},
    {"auto_observe", {}, false},
};

const Op kOps[] = {
    {"send", TRIRACE_NCCL_FUNC_SEND, 6},
    {"allgather", TRIRACE_NCCL_FUNC_ALLGATHER, 0},
    {"allreduce", TRIRACE_NCCL_FUNC_ALLREDUCE, 1},
};

// Rank 1 sends `bytes` as op `func` (after `warm_func`, if >= 0), rank 0
// receives; then rank 1 returns its sockets' priorities through `check`.
void SendAndCheck(const Env& env, int traffic_class, int warm_func, int func, size_t bytes,
                  const std::function<void(const std::vector<int>&)>& check) {
  auto codes = RunRanks(env, [&](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer, traffic_class);
    ASSERT_TRUE(p.ok);
    std::vector<char> buf(bytes);
    for (int f : {warm_func, func}) {
      if (f < 0) continue;
      ASSERT_EQ(p.net->SetNetAttrOp(1u << f), ncclSuccess);
      void* req = nullptr;
      void* data = buf.data();
      size_t size = bytes;
      int tag = 0;
      while (req == nullptr) {
        ASSERT_EQ(rank == 1 ? p.net->Isend(p.send_comm, data, bytes, 0, nullptr, &req)
                            : p.net->Irecv(p.recv_comm, 1, &data, &size, &tag, nullptr, &req),
                  ncclSuccess);
      }
      ASSERT_EQ(p.net->Wait(req), ncclSuccess);
    }
    if (rank == 1) check(TcpSocketOptionValues(SOL_SOCKET, SO_PRIORITY));
    EXPECT_TRUE(peer.Barrier());
    p.Close();
  });
  ExpectRanksPassed(codes);
}

class NetPluginClassPriority : public ::testing::TestWithParam<std::tuple<Setting, Op>> {};

TEST_P(NetPluginClassPriority, SendSocketsTakeTheClassPriorityOnlyWhenOn) {
  const auto& [setting, op] = GetParam();
  Env env = BaseEnv(std::string("cprio-") + setting.name + "-" + op.name);
  env.insert(env.end(), setting.env.begin(), setting.env.end());
  const int want = setting.enabled ? op.priority : 0;
  SendAndCheck(env, /*traffic_class=*/-1, /*warm_func=*/-1, op.func, 1 << 20,
               [&](const std::vector<int>& prios) {
                 int with = 0;
                 for (int v : prios) with += v == want;
                 // The send comm: 1 control + TRIRACE_NET_NSOCKS (4) data sockets.
                 EXPECT_GE(with, 5) << "sockets with SO_PRIORITY " << want << " among "
                                    << prios.size();
                 if (want == 0) {
                   for (int v : prios) EXPECT_EQ(v, 0) << "class priority is off";
                 }
               });
}

INSTANTIATE_TEST_SUITE_P(
    Sweep, NetPluginClassPriority, ::testing::Combine(::testing::ValuesIn(kSettings), ::testing::ValuesIn(kOps)),
    [](const ::testing::TestParamInfo<NetPluginClassPriority::ParamType>& info) {
      return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name;
    });

TEST(NetPluginClassPriorityTest, FollowsTheClassWhenAnOpOfAnotherClassComes) {
  Env env = BaseEnv("cprio-switch");
  env.push_back({"TRIRACE_NET_CLASS_PRIORITY", "on"});
  SendAndCheck(env, -1, TRIRACE_NCCL_FUNC_SEND, TRIRACE_NCCL_FUNC_ALLREDUCE, 64 << 10,
               [](const std::vector<int>& prios) {
                 int dense = 0, p2p = 0;
                 for (int v : prios) {
                   dense += v == 1;
                   p2p += v == 6;
                 }
                 EXPECT_EQ(dense, 5) << "the DENSE send after a P2P one";
                 EXPECT_EQ(p2p, 0);
               });
}

TEST(NetPluginClassPriorityTest, AnExplicitTrafficClassWins) {
  Env env = BaseEnv("cprio-explicit");
  env.push_back({"TRIRACE_NET_CLASS_PRIORITY", "on"});
  // trafficClass 184 (DSCP EF) -> SO_PRIORITY 5 (its precedence bits).
  SendAndCheck(env, 184, -1, TRIRACE_NCCL_FUNC_SEND, 64 << 10, [](const std::vector<int>& prios) {
    int five = 0;
    for (int v : prios) {
      five += v == 5;
      EXPECT_NE(v, 6) << "class priority overrode the comm's trafficClass";
    }
    EXPECT_EQ(five, 5);
  });
}

}  // namespace
}  // namespace net_test
