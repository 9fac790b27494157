// tools/testbed/testbed.sh with several NICs per host (--nics): one bridge
// and one shaped uplink per host per rail, each rank on the rail of its
// local rank, the JSON spec that describes the test bed, and that traffic
// to a rail's address crosses that rail's links only.
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testbed_fixture.h"
#include "topology/discovery/spec_file.h"

namespace trirace::testbed {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::RunProcess;

class TestbedRails : public TestbedTest {};

std::string Addr(int rail, int host) { return "10.213." + std::to_string(rail) + "." + std::to_string(10 + host); }

TEST_F(TestbedRails, EveryHostHasAShapedUplinkPerRail) {
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--nics", "2", "--rate", "50mbit", "--prio"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  EXPECT_EQ(tb.addrs, (std::vector<std::string>{Addr(0, 0), Addr(0, 1)})) << "addrs= lists rail 0";
  const std::string fab = tb.name + "-fab";
  for (int h = 0; h < 2; ++h) {
    const std::string host = tb.name + "-h" + std::to_string(h);
    for (int k = 0; k < 2; ++k) {
      const std::string dev = "tb" + std::to_string(k);
      const std::string port = "p" + std::to_string(h) + (k == 0 ? "" : "r" + std::to_string(k));
      EXPECT_THAT(RunProcess({"ip", "-n", host, "-o", "-4", "addr", "show", "dev", dev}).out,
                  HasSubstr("inet " + Addr(k, h) + "/24"));
      EXPECT_THAT(QdiscStats(host, dev), AllOf(HasSubstr("rate 50Mbit"), HasSubstr("pfifo_fast 20:")));
      EXPECT_THAT(QdiscStats(fab, port), HasSubstr("rate 50Mbit"));
      EXPECT_THAT(RunProcess({"ip", "-n", fab, "-o", "link", "show", "dev", port}).out,
                  HasSubstr("master tbbr" + std::to_string(k)));
    }
  }
  // Again with one NIC: rail 1 goes, in the hosts and in the fabric.
  auto r = Script({"up", "--name", tb.name, "--owner", std::to_string(getpid()), "--hosts", "2", "--rate", "50mbit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("nics=1"));
  EXPECT_NE(RunProcess({"ip", "-n", tb.name + "-h0", "link", "show", "dev", "tb1"}).exit_code, 0);
  EXPECT_NE(RunProcess({"ip", "-n", fab, "link", "show", "dev", "tbbr1"}).exit_code, 0);
  EXPECT_NE(RunProcess({"ip", "-n", fab, "link", "show", "dev", "p0r1"}).exit_code, 0);
}

TEST_F(TestbedRails, RanksUseTheRailOfTheirLocalRankAndGetTheSpec) {
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--nics", "2", "--rate", "100mbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  RunOutcome o = Run(tb, {"--ranks-per-host", "3", "--timeout", "60"},
                     {"sh", "-c",
                      "echo \"$RANK $LOCAL_RANK $TRIRACE_NIC $TRIRACE_NET_IFNAME $NCCL_SOCKET_IFNAME $TESTBED_RAIL "
                      "$TESTBED_IFNAMES $TESTBED_HOST_ADDR $TRIRACE_HOST_ID\"; echo \"spec=$TRIRACE_TOPO_FILE\""});
  ASSERT_EQ(o.process.exit_code, 0) << o.process.err;
  ASSERT_EQ(o.rank_out.size(), 6u);
  for (int r = 0; r < 6; ++r) {
    const int h = r / 3, local = r % 3, rail = local % 2;
    const std::string nic = "tb" + std::to_string(rail);
    EXPECT_THAT(o.rank_out[r], HasSubstr(std::to_string(r) + " " + std::to_string(local) + " " + nic + " " + nic +
                                         " " + nic + " " + std::to_string(rail) + " tb0,tb1 " + Addr(rail, h) +
                                         " h" + std::to_string(h)));
    EXPECT_THAT(o.rank_out[r], HasSubstr("spec=" + o.out_dir + "/topology.json"));
  }
  // The spec the ranks are given describes the test bed: hosts by the keys
  // the ranks use, each uplink a NIC on its own rail at the shaped rate.
  auto system = topo::LoadTopologySpec(o.out_dir + "/topology.json");
  ASSERT_TRUE(system.ok()) << system.status();
  EXPECT_EQ(system->fabric.kind, topo::Fabric::Kind::kRailOptimized);
  ASSERT_EQ(system->hosts.size(), 2u);
  for (int h = 0; h < 2; ++h) {
    const topo::Host& host = system->hosts[h];
    EXPECT_EQ(host.key, "h" + std::to_string(h));
    ASSERT_EQ(host.nics.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(host.nics[k].name, "tb" + std::to_string(k));
      EXPECT_EQ(host.nics[k].rail, k);
      EXPECT_DOUBLE_EQ(host.nics[k].gbps, 0.1);
      EXPECT_EQ(host.nics[k].link_layer, topo::LinkLayer::kEthernet);
    }
  }
  // `spec` prints the same.
  auto spec = Script({"spec", "--name", tb.name});
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  EXPECT_EQ(spec.out, ReadFile(o.out_dir + "/topology.json"));
}

TEST_F(TestbedRails, OneNicIsASingleSwitch) {
  Testbed tb;
  UpOrSkip({"--hosts", "3", "--rate", "100mbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  auto spec = Script({"spec", "--name", tb.name});
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  EXPECT_THAT(spec.out, AllOf(HasSubstr("\"kind\": \"single_switch\""), HasSubstr("\"name\": \"tb0\""),
                              Not(HasSubstr("tb1")), HasSubstr("{\"key\": \"h2\", \"like\": \"h0\"}")));
}

TEST_F(TestbedRails, TrafficToARailsAddressCrossesThatRailOnly) {
  if (RunProcess({"sh", "-c", "command -v ping"}).exit_code != 0) GTEST_SKIP() << "no ping";
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--nics", "2", "--rate", "100mbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  const std::string fab = tb.name + "-fab";
  const long long rail0_before = QdiscSentBytes(QdiscStats(fab, "p1"));
  const long long rail1_before = QdiscSentBytes(QdiscStats(fab, "p1r1"));
  // 20 pings of 8000 bytes from host 0 to host 1's rail-1 address.
  auto ping = RunProcess({"ip", "netns", "exec", tb.name + "-h0", "ping", "-q", "-c", "20", "-i", "0.01", "-W", "2",
                          "-s", "8000", Addr(1, 1)});
  ASSERT_EQ(ping.exit_code, 0) << ping.out << ping.err;
  const long long rail0 = QdiscSentBytes(QdiscStats(fab, "p1")) - rail0_before;
  const long long rail1 = QdiscSentBytes(QdiscStats(fab, "p1r1")) - rail1_before;
  EXPECT_GE(rail1, 20 * 8000) << "the echo requests reach host 1 through rail 1";
  EXPECT_LT(rail0, 8000) << "and nothing of them through rail 0";
}

TEST_F(TestbedRails, BadNicCountsAreUsageErrors) {
  auto r = Script({"up", "--nics", "9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--nics '9': expected an integer from 1 to 8"));
  r = Script({"up", "--nics", "two"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--nics 'two'"));
  r = Script({"up", "--nics", "3", "--ifname", "abcdefghijklmn9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("longer than 15 characters"));
  r = Script({"spec"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec needs --name NAME"));
}

}  // namespace
}  // namespace trirace::testbed
