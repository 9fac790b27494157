// The simulated network (sim/net/network.h): times that follow from the
// rates by hand, max-min sharing, strict class priority, message order on
// one connection, latency, token buckets and byte counters.
#include "sim/net/network.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace::sim {
namespace {

constexpr double kGB = 1e9;  // bytes/s: 1 GB/s moves 1 byte per ns

// Runs until nothing moves; returns each flow's finish time by cookie.
std::vector<int64_t> RunAll(Network& net, size_t flows) {
  std::vector<int64_t> done(flows, -1);
  std::vector<uint64_t> finished;
  for (int64_t t = net.NextEventNs(); t != kNever; t = net.NextEventNs()) {
    finished.clear();
    net.AdvanceTo(t, &finished);
    for (uint64_t c : finished) done[c] = t;
  }
  return done;
}

FlowSpec Flow(std::vector<FlowLink> links, double bytes, uint64_t cookie, int level = 0) {
  FlowSpec f;
  f.links = std::move(links);
  f.bytes = bytes;
  f.cookie = cookie;
  f.level = level;
  return f;
}

TEST(NetworkTest, OneFlowTakesBytesOverRate) {
  Network net({{"l", kGB}}, false);
  net.Start(Flow({{0}}, 1e6, 0), 0);
  EXPECT_EQ(RunAll(net, 1)[0], 1'000'000);
  EXPECT_NEAR(net.LinkBytes(0), 1e6, 1e-3);
}

TEST(NetworkTest, TwoFlowsShareALinkFairlyAndTheSurvivorSpeedsUp) {
  // 1 MB and 2 MB together: both at half rate until the first ends at
  // 2 ms, then the second alone moves its last 1 MB in 1 ms.
  Network net({{"l", kGB}}, false);
  net.Start(Flow({{0}}, 1e6, 0), 0);
  net.Start(Flow({{0}}, 2e6, 1), 0);
  const std::vector<int64_t> done = RunAll(net, 2);
  EXPECT_EQ(done[0], 2'000'000);
  EXPECT_EQ(done[1], 3'000'000);
}

TEST(NetworkTest, MaxMinFairnessGivesTheUnusedShareToWhoCanUseIt) {
  // Link 0 (1 GB/s) carries flows a and b; b also crosses link 1 at
  // 0.25 GB/s, so b gets 0.25 and a the remaining 0.75 of link 0.
  Network net({{"l0", kGB}, {"l1", kGB / 4}}, false);
  net.Start(Flow({{0}}, 0.75e6, 0), 0);
  net.Start(Flow({{0}, {1}}, 0.25e6, 1), 0);
  const std::vector<int64_t> done = RunAll(net, 2);
  EXPECT_EQ(done[0], 1'000'000);
  EXPECT_EQ(done[1], 1'000'000);
}

TEST(NetworkTest, StrictPriorityStarvesTheLowerClassUntilTheHigherIsDone) {
  Network net({{"l", kGB}}, true);
  net.Start(Flow({{0}}, 1e6, 0, /*level=*/2), 0);
  net.Start(Flow({{0}}, 1e6, 1, /*level=*/0), 0);
  std::vector<int64_t> done = RunAll(net, 2);
  EXPECT_EQ(done[1], 1'000'000);  // the higher class alone
  EXPECT_EQ(done[0], 2'000'000);
  // Without class queues the same flows share.
  Network shared({{"l", kGB}}, false);
  shared.Start(Flow({{0}}, 1e6, 0, 2), 0);
  shared.Start(Flow({{0}}, 1e6, 1, 0), 0);
  done = RunAll(shared, 2);
  EXPECT_EQ(done[0], 2'000'000);
  EXPECT_EQ(done[1], 2'000'000);
}

TEST(NetworkTest, AHigherClassTakesWhatItCanAndTheLowerFillsTheRest) {
  // The P2P flow is limited to 0.25 GB/s by its other link; DENSE fills
  // the rest of the shared link (work conserving).
  Network net({{"shared", kGB}, {"slow", kGB / 4}}, true);
  net.Start(Flow({{0}, {1}}, 0.25e6, 0, 0), 0);
  net.Start(Flow({{0}}, 0.75e6, 1, 2), 0);
  const std::vector<int64_t> done = RunAll(net, 2);
  EXPECT_EQ(done[0], 1'000'000);
  EXPECT_EQ(done[1], 1'000'000);
}

TEST(NetworkTest, ARoundingResidueIsNoShare) {
  // Three equal shares of 1e9/7 B/s leave 1.5e-8 B/s in doubles; the lower
  // class must wait for the link instead of crawling at that rate (before
  // the fix its finish time overflowed and the run never ended).
  Network net({{"l", 1e9 / 7}}, true);
  for (uint64_t i = 0; i < 3; ++i) net.Start(Flow({{0}}, 1e6, i, 0), 0);
  net.Start(Flow({{0}}, 1e6, 3, 2), 0);
  const std::vector<int64_t> done = RunAll(net, 4);
  EXPECT_NEAR(double(done[0]), 21e6, 2);
  EXPECT_NEAR(double(done[3]), 28e6, 3);
}

TEST(NetworkTest, TransfersOfOneFlowTakeOneShareEach) {
  // A ring's flow with two transfers on the link against a single send:
  // three shares, the ring's two at a third each.
  Network net({{"l", 3 * kGB}}, false);
  net.Start(Flow({{0, 2}}, 1e6, 0), 0);
  net.Start(Flow({{0, 1}}, 1e6, 1), 0);
  const std::vector<int64_t> done = RunAll(net, 2);
  EXPECT_EQ(done[0], 1'000'000);
  EXPECT_EQ(done[1], 1'000'000);
  EXPECT_NEAR(net.LinkBytes(0), 3e6, 1e-3);
}

TEST(NetworkTest, LatencyDelaysTheStartAndAKeyKeepsPostOrder) {
  Network net({{"l", kGB}}, false);
  FlowSpec a = Flow({{0}}, 1e6, 0), b = Flow({{0}}, 1e6, 1);
  a.latency_ns = b.latency_ns = 500;
  a.fifo_key = b.fifo_key = 7;  // one connection: b waits for a
  net.Start(a, 0);
  net.Start(b, 0);
  const std::vector<int64_t> done = RunAll(net, 2);
  EXPECT_EQ(done[0], 1'000'500);
  EXPECT_EQ(done[1], 2'000'500);
}

TEST(NetworkTest, UnlimitedLinksFinishAtOnce) {
  Network net({{"shm", 0}}, false);
  FlowSpec f = Flow({{0}}, 1e9, 0);
  f.latency_ns = 20;
  net.Start(f, 0);
  EXPECT_EQ(RunAll(net, 1)[0], 20);
}

TEST(NetworkTest, ATokenBucketSendsItsBurstAtLineRate) {
  // 1 MB of tokens at 10 GB/s line, 1 GB/s sustained: tokens drain at
  // 9 GB/s, lasting 111112 ns and carrying ~1.111 MB; the other ~0.889 MB
  // go at 1 GB/s.
  NetLinkSpec l{"nic", kGB, 1e6, 10 * kGB};
  Network net({l}, false);
  net.Start(Flow({{0}}, 2e6, 0), 0);
  const int64_t done = RunAll(net, 1)[0];
  EXPECT_NEAR(double(done), 111'112 + (2e6 - 1.11112e6), 10);
  // Emptied, then refilled once the flow is done.
  EXPECT_EQ(net.stats().bucket_changes, 2u);
}

TEST(NetworkTest, CountersIntegrateTheTransfersPointedAtThem) {
  Network net({{"l", kGB}}, false);
  const int mine = net.AddCounter();
  net.Start(Flow({{0, 1, mine}}, 1e6, 0), 0);
  net.Start(Flow({{0}}, 1e6, 1), 0);
  RunAll(net, 2);
  EXPECT_NEAR(net.CounterBytes(mine), 1e6, 1e-3);
  EXPECT_NEAR(net.LinkBytes(0), 2e6, 1e-3);
}

// Class queues on some links only (trirace sim --qos host): the senders'
// egress queues ("tx") honour classes, the downlinks ("rx") are one FIFO.
NetLinkSpec Queue(const char* name, bool classes) { return {name, kGB, 0, 0, classes}; }

// A P2P (level 0) and a DENSE (level 2) flow of 1 MB each on their links
// from time 0; their finish times.
std::vector<int64_t> P2pAndDense(std::vector<NetLinkSpec> links, std::vector<FlowLink> p2p,
                                  std::vector<FlowLink> dense) {
  Network net(std::move(links));
  net.Start(Flow(std::move(p2p), 1e6, 0, /*level=*/0), 0);
  net.Start(Flow(std::move(dense), 1e6, 1, /*level=*/2), 0);
  return RunAll(net, 2);
}

TEST(NetworkMixedQueuesTest, AFifoDownlinkSharesTheClassesThatReachItAlike) {
  // P2P from one host and DENSE from another meet on a FIFO downlink: half
  // each. With class queues there too (--qos fabric), P2P goes first.
  EXPECT_THAT(P2pAndDense({Queue("tx0", true), Queue("tx1", true), Queue("rx", false)}, {{0}, {2}}, {{1}, {2}}),
              ::testing::ElementsAre(2'000'000, 2'000'000));
  EXPECT_THAT(P2pAndDense({Queue("tx0", true), Queue("tx1", true), Queue("rx", true)}, {{0}, {2}}, {{1}, {2}}),
              ::testing::ElementsAre(1'000'000, 2'000'000));
}

TEST(NetworkMixedQueuesTest, TheEgressQueueHoldsBackWhatItsDownlinksWouldShare) {
  // P2P and DENSE leave one host for two receivers: the egress queue sends
  // P2P alone, so DENSE takes no share of anything until P2P is done.
  // Without any class queue they share the egress.
  EXPECT_THAT(P2pAndDense({Queue("tx", true), Queue("rx0", false), Queue("rx1", false)}, {{0}, {1}}, {{0}, {2}}),
              ::testing::ElementsAre(1'000'000, 2'000'000));
  EXPECT_THAT(P2pAndDense({Queue("tx", false), Queue("rx0", false), Queue("rx1", false)}, {{0}, {1}}, {{0}, {2}}),
              ::testing::ElementsAre(2'000'000, 2'000'000));
}

TEST(NetworkMixedQueuesTest, AWaitingClassTakesWhatTheUrgentOneLeaves) {
  // a (P2P) leaves tx0 for rx0; b (DENSE) leaves tx0 for rx1; c (DENSE)
  // leaves tx1 for rx0. a and c halve rx0; b then takes the half of tx0
  // that a leaves. Once a is done (0.5 MB at 0.5 GB/s), b and c each have
  // a link to themselves for their last 0.5 MB.
  Network net({Queue("tx0", true), Queue("tx1", true), Queue("rx0", false), Queue("rx1", false)});
  net.Start(Flow({{0}, {2}}, 0.5e6, 0, /*level=*/0), 0);
  net.Start(Flow({{0}, {3}}, 1e6, 1, /*level=*/2), 0);
  net.Start(Flow({{1}, {2}}, 1e6, 2, /*level=*/2), 0);
  const std::vector<int64_t> done = RunAll(net, 3);
  EXPECT_EQ(done[0], 1'000'000);
  EXPECT_EQ(done[1], 1'500'000);
  EXPECT_EQ(done[2], 1'500'000);
  EXPECT_NEAR(net.LinkBytes(0), 1.5e6, 1e-3);
}

}  // namespace
}  // namespace trirace::sim
