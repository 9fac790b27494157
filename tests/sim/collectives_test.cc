// Collectives on simulated clusters (sim/nccl/collectives.h through
// trirace sim's --collective workload): ring times against the textbook
// formula, the channels over a DGX's rails, and nccl-tests' bandwidths.
#include "sim/nccl/collectives.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/workloads/collective.h"
#include "sim_test_util.h"

namespace trirace::sim {
namespace {

using testing::ExactBed;
using testing::RunMode;

double TimeUs(const Cluster& c, NcclFunc f, uint64_t bytes, int ranks) {
  absl::StatusOr<Workload> w = CollectiveWorkload({f, bytes, ranks, 1});
  EXPECT_TRUE(w.ok()) << w.status();
  return RunMode(c, *w, Mode::kOff).iteration_ms_median * 1e3;
}

class RingAllReduceTest : public ::testing::TestWithParam<std::tuple<int, uint64_t>> {};

TEST_P(RingAllReduceTest, TakesTwoNMinusOneOverNOfTheBufferAtTheLinkRate) {
  const auto [n, bytes] = GetParam();
  Cluster bed = ExactBed(n, 1, /*gbps=*/8);  // 1 GB/s
  bed.net_latency_ns = 10'000;
  const double wire_us = 2.0 * (n - 1) / n * double(bytes) / 1e9 * 1e6;
  const double latency_us = 2.0 * (n - 1) * 10;
  EXPECT_NEAR(TimeUs(bed, NcclFunc::kAllReduce, bytes, n), wire_us + latency_us, 0.01 * wire_us + 0.01);
}

INSTANTIATE_TEST_SUITE_P(Sweep, RingAllReduceTest,
                         ::testing::Combine(::testing::Values(2, 3, 8, 32), ::testing::Values(1 << 20, 64 << 20)));

TEST(CollectivesTest, AllGatherAndReduceScatterMoveNMinusOneBlocks) {
  Cluster bed = ExactBed(4, 1, 8);
  // 4 MB in all: each rank's 1 MB block crosses 3 hops: 3 ms.
  EXPECT_NEAR(TimeUs(bed, NcclFunc::kAllGather, 4'000'000, 4), 3000, 1);
  EXPECT_NEAR(TimeUs(bed, NcclFunc::kReduceScatter, 4'000'000, 4), 3000, 1);
}

TEST(CollectivesTest, AlltoAllSendsEveryPeerItsShare) {
  // 4 ranks on 4 hosts, 4 MB per rank: 1 MB to each of 3 peers, 3 flows
  // leave every uplink: 3 ms.
  EXPECT_NEAR(TimeUs(ExactBed(4, 1, 8), NcclFunc::kAlltoAll, 4'000'000, 4), 3000, 1);
}

TEST(CollectivesTest, ARingOverDgxNodesUsesEveryRailOnce) {
  ClusterOptions o;
  o.hosts = 2;
  absl::StatusOr<Cluster> dgx = MakeCluster("dgx-h100", o);
  ASSERT_TRUE(dgx.ok()) << dgx.status();
  ClusterLinks links(*dgx);
  std::vector<int> ranks;
  for (int r = 0; r < 16; ++r) ranks.push_back(r);
  const Layout l = LayoutCollective(NcclFunc::kAllReduce, ranks, 16 << 20, 0, links);
  // 8 channels, one per NIC: each NIC sends and receives one transfer, and
  // no transfer crosses the spine (rails match).
  std::map<LinkIx, int> nic_tx;
  int spine = 0;
  for (const Layout::Transfer& t : l.transfers) {
    for (LinkIx link : *t.path) {
      const std::string& name = links.name(link);
      if (name.rfind("nic-tx:", 0) == 0) ++nic_tx[link];
      if (name.rfind("spine", 0) == 0) ++spine;
    }
  }
  EXPECT_EQ(nic_tx.size(), 16u);
  for (const auto& [link, n] : nic_tx) EXPECT_EQ(n, 1) << links.name(link);
  EXPECT_EQ(spine, 0);
  EXPECT_EQ(l.transfers.size(), 16u * 8);  // 16 hops per channel
  EXPECT_NEAR(l.bytes_per_transfer, 2.0 * 15 / 16 * (16 << 20) / 8, 1e-6);
  EXPECT_EQ(l.steps, 30);
  // The nodes' 8 NICs of 50 GB/s each carry one channel: 2 (n-1)/n of the
  // buffer / 400 GB/s, plus 30 steps of 5 us.
  absl::StatusOr<Workload> w = CollectiveWorkload({NcclFunc::kAllReduce, uint64_t(1) << 30, 16, 1});
  ASSERT_TRUE(w.ok());
  const double us = RunMode(*dgx, *w, Mode::kOff).iteration_ms_median * 1e3;
  const double wire_us = 2.0 * 15 / 16 * double(1 << 30) / 400e9 * 1e6;
  EXPECT_NEAR(us, wire_us + 30 * 5, 0.01 * wire_us);
}

TEST(CollectivesTest, SendRecvOfOneMessageTakesItsBytesOverTheRate) {
  EXPECT_NEAR(TimeUs(ExactBed(2, 1, 8), NcclFunc::kSend, 1'000'000, 2), 1000, 1);
}

TEST(CollectivesTest, BadSpecsAreNamed) {
  absl::StatusOr<Workload> w = CollectiveWorkload({NcclFunc::kAllReduce, 0, 4, 1});
  EXPECT_THAT(std::string(w.status().message()), ::testing::HasSubstr("--bytes 0"));
  w = CollectiveWorkload({NcclFunc::kAllReduce, 10, 1, 1});
  EXPECT_THAT(std::string(w.status().message()), ::testing::HasSubstr("--ranks 1"));
  EXPECT_FALSE(CollectiveFromName("broadcastish").has_value());
}

}  // namespace
}  // namespace trirace::sim
