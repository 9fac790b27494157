// tools/testbed/testbed.sh on its own: exit codes, shaping, idempotent
// setup, rank launch and supervision, teardown on signals, cleanup of
// leftovers, and that the namespace the tests run in is left untouched.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testbed_fixture.h"

extern char** environ;

namespace trirace::testbed {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::RunProcess;

// A test-bed name unique to this process and call.
std::string UniqueName() {
  static int n = 0;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "trtb-%d-%x", int(getpid()), 0xa000 + n++);
  return buf;
}

class TestbedScript : public TestbedTest {};

TEST_F(TestbedScript, WithoutRootItSaysSoAndExits77) {
  std::vector<std::string> argv = {TESTBED_SH, "up", "--hosts", "2"};
  if (geteuid() == 0) {
    if (RunProcess({"sh", "-c", "command -v setpriv"}).exit_code != 0) GTEST_SKIP() << "no setpriv";
    argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  }
  auto r = RunProcess(argv, {}, {}, 30000);
  if (geteuid() == 0 && (r.exit_code == 126 || r.exit_code == 127)) {
    GTEST_SKIP() << "uid 65534 cannot read " << TESTBED_SH << ": " << r.err;
  }
  EXPECT_EQ(r.exit_code, kExitNotRoot) << r.err;
  EXPECT_THAT(r.err, HasSubstr("needs root"));
}

TEST_F(TestbedScript, BadUsageExits2NamingTheFlag) {
  auto r = Script({"up", "--rate", "fast"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--rate 'fast': expected an integer and a unit"));
  r = Script({"up", "--hosts", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--hosts '0'"));
  r = Script({"run", "--hosts", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("run needs a command after --"));
  r = Script({"teleport"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown verb 'teleport'"));
}

TEST_F(TestbedScript, UpShapesBothDirectionsAndIsIdempotent) {
  const std::string name = UniqueName();
  Testbed tb;
  UpOrSkip({"--name", name, "--hosts", "3", "--rate", "50mbit", "--prio"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  ASSERT_EQ(tb.hosts, 3);
  EXPECT_EQ(tb.addrs, (std::vector<std::string>{"10.213.0.10", "10.213.0.11", "10.213.0.12"}));
  for (int h = 0; h < 3; ++h) {
    const std::string host = name + "-h" + std::to_string(h);
    EXPECT_THAT(QdiscStats(host, "tb0"), AllOf(HasSubstr("tbf 1: root"), HasSubstr("rate 50Mbit"),
                                                HasSubstr("pfifo_fast 20:")));
    EXPECT_THAT(QdiscStats(name + "-fab", "p" + std::to_string(h)),
                AllOf(HasSubstr("rate 50Mbit"), HasSubstr("pfifo_fast")));
    auto addr = RunProcess({"ip", "-n", host, "-o", "-4", "addr", "show", "dev", "tb0"});
    EXPECT_THAT(addr.out, HasSubstr("10.213.0.1" + std::to_string(h) + "/24"));
  }
  // The fabric maps DSCP to priority, as a switch would (socket priorities
  // do not cross into the fabric's namespace).
  auto nft = RunProcess({"ip", "netns", "exec", name + "-fab", "nft", "list", "table", "bridge", "trirace_tb"});
  EXPECT_THAT(nft.out, AllOf(HasSubstr("ip dscp ef meta priority set 0:6"),
                             HasSubstr("ip dscp cs1 meta priority set 0:1")))
      << nft.err;
  // Again with another shape and fewer hosts: same name, new shape.
  auto r = Script({"up", "--name", name, "--owner", std::to_string(getpid()), "--hosts", "2", "--rate", "20mbit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("hosts=2"));
  EXPECT_THAT(QdiscStats(name + "-h0", "tb0"), AllOf(HasSubstr("rate 20Mbit"), Not(HasSubstr("pfifo_fast"))));
  EXPECT_NE(RunProcess({"ip", "netns", "exec", name + "-fab", "nft", "list", "table", "bridge", "trirace_tb"})
                .exit_code,
            0)
      << "the DSCP table outlived --prio";
  EXPECT_THAT(NetnsWithPrefix(name + "-"),
              ::testing::UnorderedElementsAre(name + "-fab", name + "-h0", name + "-h1"));
}

// `ip -o link show` of one device in a namespace.
std::string LinkLine(const std::string& ns, const std::string& dev) {
  return RunProcess({"ip", "-n", ns, "-o", "link", "show", "dev", dev}).out;
}

TEST_F(TestbedScript, LinksCarryTheMtuAndTheSwitchSideHasTheQueue) {
  const std::string name = UniqueName();
  Testbed tb;
  // 100 Mbit/s for 10 ms is 125000 bytes: 31 frames of 4000 bytes.
  UpOrSkip({"--name", name, "--hosts", "2", "--rate", "100mbit", "--mtu", "4000", "--queue", "10ms", "--prio"},
           &tb);
  if (IsSkipped() || HasFailure()) return;
  for (int h = 0; h < 2; ++h) {
    const std::string host = name + "-h" + std::to_string(h), port = "p" + std::to_string(h);
    // The host's own transmit queue is the kernel's default, which its
    // sockets fill only up to their own limit; the switch port in front
    // of the host holds --queue.
    EXPECT_THAT(LinkLine(host, "tb0"), AllOf(HasSubstr("mtu 4000 "), HasSubstr("qlen 1000")));
    EXPECT_EQ(RunProcess({"ip", "netns", "exec", host, "sysctl", "-n", "net.ipv4.tcp_limit_output_bytes"}).out,
              "262144\n");
    // Idle connections keep their window, as on a cluster fabric.
    EXPECT_EQ(RunProcess({"ip", "netns", "exec", host, "sysctl", "-n", "net.ipv4.tcp_slow_start_after_idle"}).out,
              "0\n");
    EXPECT_THAT(LinkLine(name + "-fab", port), AllOf(HasSubstr("mtu 4000 "), HasSubstr("qlen 31")));
  }
  EXPECT_THAT(LinkLine(name + "-fab", "tbbr0"), HasSubstr("mtu 4000 "));
  // A frame larger than the MTU does not pass: a 3000-byte ping does, a
  // 5000-byte one with "don't fragment" does not.
  auto ping = [&](int size) {
    return RunProcess({"ip", "netns", "exec", name + "-h0", "ping", "-c", "1", "-W", "2", "-M", "do", "-s",
                       std::to_string(size), "10.213.0.11"})
        .exit_code;
  };
  if (RunProcess({"sh", "-c", "command -v ping"}).exit_code == 0) {
    EXPECT_EQ(ping(3000), 0);
    EXPECT_NE(ping(5000), 0);
  }
}

TEST_F(TestbedScript, MtuAndBurstAreChecked) {
  auto r = Script({"up", "--mtu", "100000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--mtu '100000': expected an integer from 576 to 65535"));
  r = Script({"up", "--mtu", "9000", "--burst", "4096"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--burst '4096': must hold one frame of --mtu 9000"));
}

TEST_F(TestbedScript, DelayUsesNetemOrExplainsWhyItCannot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  const std::string name = UniqueName();
  auto r = Script({"up", "--name", name, "--owner", std::to_string(getpid()), "--hosts", "2",
                   "--rate", "100mbit", "--delay", "2ms"});
  if (r.exit_code == 0) {
    made_.push_back(name);
    EXPECT_THAT(QdiscStats(name + "-h1", "tb0"), HasSubstr("delay 2ms"));
  } else {
    EXPECT_EQ(r.exit_code, kExitNoSupport) << r.err;
    EXPECT_THAT(r.err, HasSubstr("netem"));
    EXPECT_EQ(NetnsWithPrefix(name + "-"), std::vector<std::string>{}) << "a failed up left namespaces";
  }
}

TEST_F(TestbedScript, TheCallersNamespaceIsLeftAsItWas) {
  auto snapshot = CallerNamespaceState;
  const std::string before = snapshot();
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--rate", "100mbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(Script({"down", "--name", tb.name}).exit_code, 0);
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(NetnsWithPrefix(tb.name + "-"), std::vector<std::string>{});
}

TEST_F(TestbedScript, RunGivesEveryRankItsHostAndEnvironment) {
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--rate", "100mbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  RunOutcome o = Run(tb, {"--ranks-per-host", "2", "--timeout", "60"},
                     {"sh", "-c",
                      "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $TRIRACE_HOST_ID $TRIRACE_NET_IFNAME "
                      "$TESTBED_HOST_ADDR $MASTER_ADDR $TRIRACE_JOB_ID\"; "
                      "ip -o -4 addr show dev \"$TRIRACE_NET_IFNAME\""});
  ASSERT_EQ(o.process.exit_code, 0) << o.process.err;
  EXPECT_THAT(o.process.out, HasSubstr("TESTBED-RUN status=ok"));
  ASSERT_EQ(o.rank_out.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const int h = r / 2;
    const std::string addr = "10.213.0.1" + std::to_string(h);
    EXPECT_THAT(o.rank_out[r], HasSubstr(std::to_string(r) + " 4 " + std::to_string(r % 2) + " h" +
                                         std::to_string(h) + " tb0 " + addr + " 10.213.0.10 " + tb.name +
                                         "-h" + std::to_string(h)));
    EXPECT_THAT(o.rank_out[r], HasSubstr("inet " + addr + "/24")) << "rank " << r << " is not in host " << h;
  }
}

TEST_F(TestbedScript, OneFailingRankStopsTheOthers) {
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--rate", "100mbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  RunOutcome o = Run(tb, {"--ranks-per-host", "1", "--timeout", "100"},
                     {"sh", "-c", "if [ \"$RANK\" = 1 ]; then echo boom >&2; exit 9; fi; exec sleep 90"}, 60000);
  EXPECT_FALSE(o.process.timed_out) << "the sleeping rank was not killed";
  EXPECT_EQ(o.process.exit_code, 1);
  EXPECT_THAT(o.process.out, HasSubstr("status=failed"));
  EXPECT_THAT(o.process.err, AllOf(HasSubstr("rank 1 exited with 9"), HasSubstr("boom")));
  std::ifstream tsv(o.out_dir + "/ranks.tsv");
  std::string all((std::istreambuf_iterator<char>(tsv)), std::istreambuf_iterator<char>());
  EXPECT_THAT(all, AllOf(HasSubstr("0\th0"), HasSubstr("killed"), HasSubstr("1\th1")));
  // Nothing of that run still lives in the hosts.
  EXPECT_EQ(RunProcess({"ip", "netns", "pids", tb.name + "-h0"}).out, "");
}

TEST_F(TestbedScript, TimeoutKillsEveryRank) {
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--rate", "100mbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  RunOutcome o = Run(tb, {"--ranks-per-host", "2", "--timeout", "1"}, {"sleep", "90"}, 60000);
  EXPECT_FALSE(o.process.timed_out);
  EXPECT_EQ(o.process.exit_code, kExitTimeout);
  EXPECT_THAT(o.process.out, HasSubstr("status=timeout"));
  EXPECT_EQ(RunProcess({"ip", "netns", "pids", tb.name + "-h1"}).out, "");
}

TEST_F(TestbedScript, SigtermTearsDownAPrivateTestbed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  std::vector<std::string> args = {TESTBED_SH, "run", "--hosts", "2", "--rate", "100mbit",
                                   "--ranks-per-host", "1", "--", "sleep", "90"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  // The private test bed is named after the script's pid.
  const std::string prefix = "trtb-" + std::to_string(pid) + "-";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  bool exited = false;
  auto ranks_started = [&] {
    for (const std::string& ns : NetnsWithPrefix(prefix)) {
      if (ns.size() > 3 && ns.compare(ns.size() - 3, 3, "-h1") == 0) {
        return !RunProcess({"ip", "netns", "pids", ns}).out.empty();
      }
    }
    return false;
  };
  while (!ranks_started()) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the test bed never came up";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (exited) {
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == kExitNoSupport) GTEST_SKIP() << "no namespace support";
    FAIL() << "testbed.sh exited early with " << WEXITSTATUS(status);
  }
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 143);
  EXPECT_EQ(NetnsWithPrefix(prefix), std::vector<std::string>{});
}

TEST_F(TestbedScript, CleanupRemovesLeftoversAndSparesLiveTestbeds) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  // A process that is gone: its test bed is a leftover.
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  auto r = Script({"up", "--hosts", "2", "--rate", "100mbit", "--owner", std::to_string(child)});
  if (r.exit_code == kExitNoSupport) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string leftover = "trtb-" + std::to_string(child) + "-";
  ASSERT_EQ(NetnsWithPrefix(leftover).size(), 3u);
  Testbed live;
  UpOrSkip({"--hosts", "1", "--rate", "100mbit"}, &live);
  ASSERT_FALSE(HasFailure());
  EXPECT_THAT(Script({"list"}).out, HasSubstr(" leftover"));

  r = Script({"cleanup"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(NetnsWithPrefix(leftover), std::vector<std::string>{});
  EXPECT_EQ(NetnsWithPrefix(live.name + "-").size(), 2u) << "cleanup removed a test bed whose owner lives";

  r = Script({"cleanup", "--prefix", live.name});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(NetnsWithPrefix(live.name + "-"), std::vector<std::string>{});
}

}  // namespace
}  // namespace trirace::testbed
