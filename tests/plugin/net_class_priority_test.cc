// Class priority (TRIRACE_NET_CLASS_PRIORITY): when it is on, a send comm's
// sockets take the SO_PRIORITY of the class of what it sends (P2P 6,
// SPARSE 0, DENSE 1) and DSCP (EF, 0, CS1), so priority queues serve
// pipeline traffic first;
// when it is off, or the comm has an explicit trafficClass, they keep
// theirs. Where the shim says this process's DENSE goes ahead (rule [R14],
// trirace_dense_ahead(); here a stand-in provider of the API), DENSE takes
// SPARSE's marks. Ranks are processes: rank 1 sends, rank 0 receives.
#include <netinet/in.h>
#include <sys/socket.h>

#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"
#include "trirace/trirace.h"

// A stand-in for the shim's annotation API with only dense_ahead: what the
// plugin asks at each send. The ranks are forked after the test sets it.
namespace {
int g_dense_ahead = 0;
int StandInDenseAhead() { return g_dense_ahead; }
const trirace_api_v1_t kStandInApi = {
    .size = sizeof(trirace_api_v1_t),
    .version = TRIRACE_API_VERSION,
    .push_tag = nullptr,
    .pop_tag = nullptr,
    .set_comm_role = nullptr,
    .iteration_begin = nullptr,
    .iteration_end = nullptr,
    .scheduler_active = nullptr,
    .set_new_comm_role = nullptr,
    .dense_ahead = StandInDenseAhead,
};
}  // namespace

extern "C" __attribute__((visibility("default"))) const trirace_api_v1_t* trirace_get_api(uint32_t version) {
  return version == TRIRACE_API_VERSION ? &kStandInApi : nullptr;
}

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
  int tos;       // expected IP TOS when enabled
};

void PrintTo(const Setting& s, std::ostream* os) { *os << s.name; }
void PrintTo(const Op& o, std::ostream* os) { *os << o.name; }

const Setting kSettings[] = {
    {"on", {{"TRIRACE_NET_CLASS_PRIORITY", "on"}}, true},
    {"off", {{"TRIRACE_NET_CLASS_PRIORITY", "off"}, {"TRIRACE_MODE", "schedule"}}, false},
    {"auto_trirace", {{"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "trirace"}}, true},
    {"auto_priority", {{"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "priority"}}, false},
    {"auto_observe", {}, false},
};

const Op kOps[] = {
    {"send", TRIRACE_NCCL_FUNC_SEND, 6, 0xb8},
    {"allgather", TRIRACE_NCCL_FUNC_ALLGATHER, 0, 0},
    {"allreduce", TRIRACE_NCCL_FUNC_ALLREDUCE, 1, 0x20},
};

// SO_PRIORITY and IP TOS of one socket.
struct Marks {
  int priority;
  int tos;
};

// The marks of every IPv4 TCP socket of this process.
std::vector<Marks> SocketMarks() {
  std::vector<int> prio = TcpSocketOptionValues(SOL_SOCKET, SO_PRIORITY);
  std::vector<int> tos = TcpSocketOptionValues(IPPROTO_IP, IP_TOS);
  std::vector<Marks> out;
  for (size_t i = 0; i < prio.size() && i < tos.size(); ++i) out.push_back({prio[i], tos[i]});
  return out;
}

int Count(const std::vector<Marks>& marks, int priority, int tos) {
  int n = 0;
  for (const Marks& m : marks) n += m.priority == priority && m.tos == tos;
  return n;
}

// Rank 1 sends `bytes` as op `func` (after `warm_func`, if >= 0), rank 0
// receives; then rank `checked` (1: the sender) hands its sockets' marks
// to `check`.
void SendAndCheck(const Env& env, int traffic_class, int warm_func, int func, size_t bytes,
                  const std::function<void(const std::vector<Marks>&)>& check, int checked = 1) {
  auto codes = RunRanks(env, [&](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer, traffic_class);
    ASSERT_TRUE(p.ok);
    std::vector<char> buf(bytes);
    for (int f : {warm_func, func}) {
      if (f < 0) continue;
      ASSERT_EQ(p.net->SetNetAttrOp(1u << f), ncclSuccess);
      ASSERT_TRUE(p.MoveOne(rank, buf.data(), bytes));
    }
    if (rank == checked) check(SocketMarks());
    EXPECT_TRUE(peer.Barrier());
    p.Close();
  });
  ExpectRanksPassed(codes);
}

class NetPluginClassPriority : public ::testing::TestWithParam<std::tuple<Setting, Op>> {};

TEST_P(NetPluginClassPriority, SendSocketsTakeTheClassPriorityOnlyWhenOn) {
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  const Setting& setting = std::get<0>(GetParam());
  const Op& op = std::get<1>(GetParam());
  Env env = BaseEnv(std::string("cprio-") + setting.name + "-" + op.name);
  env.insert(env.end(), setting.env.begin(), setting.env.end());
  const int want_prio = setting.enabled ? op.priority : 0;
  const int want_tos = setting.enabled ? op.tos : 0;
  SendAndCheck(env, /*traffic_class=*/-1, /*warm_func=*/-1, op.func, 1 << 20,
               [&](const std::vector<Marks>& marks) {
                 // The send comm: 1 control + 4 data sockets (TRIRACE_NET_NSOCKS auto on loopback).
                 EXPECT_GE(Count(marks, want_prio, want_tos), 5)
                     << "sockets with SO_PRIORITY " << want_prio << " and TOS " << want_tos
                     << " among " << marks.size();
                 if (!setting.enabled) {
                   EXPECT_EQ(Count(marks, 0, 0), static_cast<int>(marks.size())) << "class priority is off";
                 }
               });
}

INSTANTIATE_TEST_SUITE_P(
    NetPlugin, NetPluginClassPriority, ::testing::Combine(::testing::ValuesIn(kSettings), ::testing::ValuesIn(kOps)),
    [](const ::testing::TestParamInfo<NetPluginClassPriority::ParamType>& info) {
      return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name;
    });

TEST(NetPluginClassPriorityTest, FollowsTheClassWhenAnOpOfAnotherClassComes) {
  Env env = BaseEnv("cprio-switch");
  env.push_back({"TRIRACE_NET_CLASS_PRIORITY", "on"});
  SendAndCheck(env, -1, TRIRACE_NCCL_FUNC_SEND, TRIRACE_NCCL_FUNC_ALLREDUCE, 64 << 10,
               [](const std::vector<Marks>& marks) {
                 EXPECT_EQ(Count(marks, 1, 0x20), 5) << "the DENSE send after a P2P one";
                 EXPECT_EQ(Count(marks, 6, 0xb8), 0);
               });
}

TEST(NetPluginClassPriorityTest, ReceiveSocketsSendTheirAcknowledgementsInTheFirstBand) {
  // TCP's acknowledgements of DENSE data must not queue behind the reverse
  // direction's data: a receive comm's sockets take the P2P marks.
  for (bool on : {true, false}) {
    Env env = BaseEnv(on ? "cprio-acks-on" : "cprio-acks-off");
    env.push_back({"TRIRACE_NET_CLASS_PRIORITY", on ? "on" : "off"});
    SendAndCheck(
        env, -1, -1, TRIRACE_NCCL_FUNC_ALLREDUCE, 1 << 20,
        [on](const std::vector<Marks>& marks) {
          if (on) {
            EXPECT_EQ(Count(marks, 6, 0xb8), 5) << "the receive comm: 1 control + 4 data sockets";
            EXPECT_EQ(Count(marks, 1, 0x20), 0) << "a receive socket took the class of the data";
          } else {
            EXPECT_EQ(Count(marks, 0, 0), static_cast<int>(marks.size())) << "class priority is off";
          }
        },
        /*checked=*/0);
  }
}

TEST(NetPluginClassPriorityTest, AnExplicitTrafficClassWins) {
  Env env = BaseEnv("cprio-explicit");
  env.push_back({"TRIRACE_NET_CLASS_PRIORITY", "on"});
  // trafficClass 184 (DSCP EF) -> TOS 184, SO_PRIORITY 5 (its precedence bits).
  SendAndCheck(env, 184, -1, TRIRACE_NCCL_FUNC_SEND, 64 << 10, [](const std::vector<Marks>& marks) {
    EXPECT_EQ(Count(marks, 5, 184), 5);
    EXPECT_EQ(Count(marks, 6, 0xb8), 0) << "class priority overrode the comm's trafficClass";
  });
}

TEST(NetPluginClassPriorityTest, DenseOfTheFrontStageTakesSparsesMarks) {
  // [R14]: the shim says this process holds its host's front stage.
  struct Reset {
    ~Reset() { g_dense_ahead = 0; }
  } reset;  // later tests see no shim's word, however this one ends
  g_dense_ahead = 1;
  Env env = BaseEnv("cprio-ahead");
  env.push_back({"TRIRACE_NET_CLASS_PRIORITY", "on"});
  SendAndCheck(env, -1, TRIRACE_NCCL_FUNC_SEND, TRIRACE_NCCL_FUNC_ALLREDUCE, 64 << 10,
               [](const std::vector<Marks>& marks) {
                 EXPECT_EQ(Count(marks, 6, 0xb8), 0) << "the marks did not change from P2P's";
                 EXPECT_EQ(Count(marks, 1, 0x20), 0) << "DENSE kept its own band";
                 EXPECT_EQ(Count(marks, 0, 0), static_cast<int>(marks.size()));
               });
  // P2P stays first either way.
  SendAndCheck(env, -1, TRIRACE_NCCL_FUNC_ALLREDUCE, TRIRACE_NCCL_FUNC_SEND, 64 << 10,
               [](const std::vector<Marks>& marks) { EXPECT_EQ(Count(marks, 6, 0xb8), 5); });
  // Without the shim's word, DENSE is DENSE.
  g_dense_ahead = 0;
  SendAndCheck(env, -1, TRIRACE_NCCL_FUNC_SEND, TRIRACE_NCCL_FUNC_ALLREDUCE, 64 << 10,
               [](const std::vector<Marks>& marks) { EXPECT_EQ(Count(marks, 1, 0x20), 5); });
}

}  // namespace
}  // namespace net_test
