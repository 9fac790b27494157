// TRIRACE_NET_RTO_MIN_US: every socket of a connected comm, on both ends,
// takes the minimum retransmission timeout (TCP_RTO_MIN_US, Linux 6.15+),
// so a message whose last segment is dropped waits about two round trips
// for its resend instead of the kernel's 200 ms floor; 0 leaves the
// kernel's setting. Ranks are processes: rank 1 sends, rank 0 receives.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"

namespace net_test {
namespace {

constexpr int kTcpRtoMinUs = 45;  // <linux/tcp.h> of Linux 6.15

// The minimum RTO of a new TCP socket, or -1 where the kernel lacks the
// option.
int FreshSocketRtoMin() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int v = -1;
  socklen_t len = sizeof(v);
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &v, &len) != 0) v = -1;
  if (fd >= 0) close(fd);
  return v;
}

struct Case {
  const char* name;
  const char* value;  // nullptr: unset (the default, 10000)
  int want_at_least;  // 0: the kernel's own value
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class NetPluginRtoMin : public ::testing::TestWithParam<Case> {};

TEST_P(NetPluginRtoMin, EverySocketOfBothEndsTakesIt) {
  const Case& c = GetParam();
  const int kernel = FreshSocketRtoMin();
  if (kernel < 0) GTEST_SKIP() << "this kernel has no TCP_RTO_MIN_US (Linux 6.15 or later)";
  Env env = BaseEnv(std::string("rtomin-") + c.name);
  if (c.value != nullptr) env.push_back({"TRIRACE_NET_RTO_MIN_US", c.value});
  auto codes = RunRanks(env, [&](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer, -1);
    ASSERT_TRUE(p.ok);
    std::vector<char> buf(1 << 20);  // striped: every data socket carries a part
    ASSERT_TRUE(p.MoveOne(rank, buf.data(), buf.size()));
    std::vector<int> values = TcpSocketOptionValues(IPPROTO_TCP, kTcpRtoMinUs);
    // 1 control + 4 data sockets per comm (auto on loopback); the
    // listener and the test's own channels keep the kernel's value.
    int taken = 0;
    for (int v : values) {
      if (c.want_at_least == 0) {
        EXPECT_EQ(v, kernel) << "TRIRACE_NET_RTO_MIN_US=0 changed a socket";
      } else if (v >= c.want_at_least && v < c.want_at_least + 10000) {
        ++taken;  // whole kernel ticks: a little above the asked value
      }
    }
    if (c.want_at_least > 0) {
      EXPECT_GE(taken, 5) << "rank " << rank << ": sockets with a minimum RTO near "
                          << c.want_at_least << " us among " << values.size();
    }
    EXPECT_TRUE(peer.Barrier());
    p.Close();
  });
  ExpectRanksPassed(codes);
}

const Case kCases[] = {
    {"default", nullptr, 10000},
    {"twenty_ms", "20000", 20000},
    {"kernel", "0", 0},
};

INSTANTIATE_TEST_SUITE_P(NetPlugin, NetPluginRtoMin, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace net_test
