// examples/hybrid_parallel as a simulator workload
// (sim/workloads/hybrid_example.h): iteration times that can be worked out
// by hand, what class priority and rule [R14] do on a shared link, and
// what crosses the links.
#include <string>

#include "config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/run/compare.h"
#include "sim/workloads/hybrid_example.h"
#include "sim_test_util.h"

namespace trirace::sim {
namespace {

using ::testing::DoubleNear;
using ::testing::Each;
using ::testing::HasSubstr;
using testing::ExactBed;
using testing::RunMode;

// 1 Gbit/s = 125 bytes per microsecond: 125 KiB take 1024 us.
hybrid::Config Small(int stages, int replicas, hybrid::Schedule schedule) {
  hybrid::Config c;
  c.stages = stages;
  c.replicas = replicas;
  c.layers = 1;
  c.fwd_us = 1000;
  c.bwd_us = 2000;
  c.micro_batches = 4;
  c.iterations = 5;
  c.warmup = 1;
  c.schedule = schedule;
  c.act_kb = 125;
  c.grad_kb = 125;
  c.bucket_kb = 125;
  return c;
}

Workload Load(const hybrid::Config& c) {
  absl::StatusOr<Workload> w = HybridExampleWorkload(c);
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

ModeResult Simulate(const hybrid::Config& c, int per_host, Mode mode = Mode::kWire) {
  return RunMode(ExactBed(c.world_size() / per_host, per_host), Load(c), mode);
}

TEST(HybridExampleSim, OnOneHostAFlushedIterationIsTheFillTheMicroBatchesAndTheDrain) {
  // (M + S - 1) (F + B) = (4 + 1) x 3 ms.
  EXPECT_THAT(Simulate(Small(2, 1, hybrid::Schedule::k1F1B), 2).iteration_ms, Each(DoubleNear(15.0, 1e-6)));
}

TEST(HybridExampleSim, OnOneHostThe2BWPipelineRunsAtTheComputeRate) {
  // No flush: after the first fill, M (F + B) per iteration.
  EXPECT_NEAR(Simulate(Small(2, 1, hybrid::Schedule::k2BW), 2).iteration_ms_median, 12.0, 1e-6);
}

TEST(HybridExampleSim, TheHostWaitsOnlyForIterationEndsItHasIssued) {
  // 2BW issues an iteration's first forwards before the previous one's
  // last backwards, so with no run-ahead (lookahead 0) some stages begin an
  // iteration whose predecessor's end they have not issued: no wait there,
  // as the trainer's host wait on an unrecorded event. Waiting can only
  // delay, so the pipeline is no faster than with a step of run-ahead.
  hybrid::Config c = Small(2, 2, hybrid::Schedule::k2BW);
  c.lookahead = 1;
  const double ahead = Simulate(c, 2).iteration_ms_median;
  c.lookahead = 0;
  const ModeResult in_step = Simulate(c, 2);
  EXPECT_EQ(in_step.iteration_ms.size(), static_cast<size_t>(c.iterations));
  EXPECT_GE(in_step.iteration_ms_median, ahead - 1e-6);
}

TEST(HybridExampleSim, ActivationsCrossTheLinkAtItsRate) {
  // One micro-batch over two hosts: F0, activation (1024 us), F1, B1,
  // gradient (1024 us), B0.
  hybrid::Config c = Small(2, 1, hybrid::Schedule::k1F1B);
  c.micro_batches = 1;
  EXPECT_THAT(Simulate(c, 1).iteration_ms, Each(DoubleNear(8.048, 1e-6)));
}

TEST(HybridExampleSim, MessagesOnOneConnectionArriveInTheOrderTheyWereSent) {
  // Two stages on two hosts, no compute, 4 micro-batches. Sends are eager,
  // so stage 0 posts activations 0 and 1 at once; a TCP stream moves them
  // one after the other, activation 0 in 1024 us. Then every step is an
  // activation one way beside a gradient the other way: (M + 1) x 1024 us.
  // Sharing the link between the two activations would deliver activation
  // 0 only after 2048 us, and every step after it would wait for the
  // gradient of the step before: 8.192 ms.
  hybrid::Config c = Small(2, 1, hybrid::Schedule::k1F1B);
  c.fwd_us = 0;
  c.bwd_us = 0;
  EXPECT_THAT(Simulate(c, 1).iteration_ms, Each(DoubleNear(5.12, 1e-6)));
  EXPECT_THAT(Simulate(c, 1, Mode::kOff).iteration_ms, Each(DoubleNear(5.12, 1e-6)));
}

TEST(HybridExampleSim, ATokenBucketLetsABurstGoAtLineRateAfterIdling) {
  // 112500 tokens drain at line - rate = 1125 B/us: 100 us at 1250 B/us
  // carry 125000 bytes; the other 3000 go at 125 B/us (24 us). Both
  // transfers find their links idle and their buckets refilled.
  hybrid::Config c = Small(2, 1, hybrid::Schedule::k1F1B);
  c.micro_batches = 1;
  Cluster bed = ExactBed(2, 1);
  bed.burst_bytes = 112500;
  bed.line_gbps = 10;
  EXPECT_THAT(RunMode(bed, Load(c), Mode::kOff).iteration_ms, Each(DoubleNear(6.248, 1e-5)));
  // A bucket smaller than one frame is no bucket.
  bed.burst_bytes = 100;
  EXPECT_THAT(RunMode(bed, Load(c), Mode::kOff).iteration_ms, Each(DoubleNear(8.048, 1e-6)));
}

TEST(HybridExampleSim, AFlushWaitsForTheAllReduceOnTheWire) {
  // Two replicas of one stage on two hosts: each sends 2 (D - 1) / D of its
  // 125 KiB of gradient, 1024 us, after its backward.
  hybrid::Config c = Small(1, 2, hybrid::Schedule::k1F1B);
  c.micro_batches = 1;
  EXPECT_THAT(Simulate(c, 1).iteration_ms, Each(DoubleNear(4.024, 1e-6)));
  // On one host the all-reduce costs nothing.
  EXPECT_THAT(Simulate(c, 2).iteration_ms, Each(DoubleNear(3.0, 1e-6)));
}

TEST(HybridExampleSim, ClassPriorityHelpsWhereDenseAndP2PShareALinkAndNowhereElse) {
  std::string error;
  for (const char* preset : {"contention", "no-contention"}) {
    hybrid::Config c;
    ASSERT_TRUE(hybrid::ApplyPreset(preset, &c, &error)) << error;
    c.iterations = 8;
    c.warmup = 2;
    const double by_class = Simulate(c, 2, Mode::kWire).iteration_ms_median;
    const double shared = Simulate(c, 2, Mode::kOff).iteration_ms_median;
    SCOPED_TRACE(preset);
    if (std::string(preset) == "contention") {
      EXPECT_LT(by_class, shared * 0.99);
    } else {
      EXPECT_NEAR(by_class, shared, 1e-6);  // only P2P crosses hosts: nothing to order
    }
  }
}

// Rule [R14] in the ideal: with two stages of a replica per host, the front
// stage's all-reduce served ahead of the other's gets the next step going
// sooner; where no host holds two stages of one replica there is no front
// stage and nothing changes.
TEST(HybridExampleSim, FrontStageFirstHelpsWhereStagesOfAReplicaShareAHostAndNowhereElse) {
  std::string error;
  for (const char* preset : {"megatron", "no-contention"}) {
    hybrid::Config c;
    ASSERT_TRUE(hybrid::ApplyPreset(preset, &c, &error)) << error;
    c.iterations = 8;
    c.warmup = 2;
    SCOPED_TRACE(preset);
    const double front = Simulate(c, 2, Mode::kIdeal).iteration_ms_median;
    const double by_class = Simulate(c, 2, Mode::kWire).iteration_ms_median;
    if (std::string(preset) == "megatron") {
      EXPECT_LT(front, by_class * 0.99);
    } else {
      EXPECT_NEAR(front, by_class, 1e-6);  // dp-inner: a host holds one stage of each replica
    }
    // One rank per host: no host holds two stages.
    EXPECT_NEAR(Simulate(c, 1, Mode::kIdeal).iteration_ms_median, Simulate(c, 1, Mode::kWire).iteration_ms_median,
                1e-6);
  }
}

TEST(HybridExampleSim, LinkBytesCountWhatCrossesBetweenHosts) {
  // An embedding stage and two dense stages, two replicas, one replica per
  // host (pp-inner): the pipeline's P2P stays inside a host and every
  // collective crosses. Per iteration a rank sends its peer: the ids
  // AllGather (D - 1) x 256 ids x 4 bytes x M, the AlltoAll of 8 KiB rows
  // forward and backward, 2 x 8192 x M, and per dense stage the ring
  // all-reduce 2(D - 1)/D x 125 KiB.
  hybrid::Config c = Small(2, 2, hybrid::Schedule::k1F1B);
  c.embedding = true;
  c.order = hybrid::Order::kPpInner;
  c.sparse_kb = 8;
  c.sparse_indices = 256;
  const double per_host = 4 * 256 * 4 + 2 * 8192 * 4 + 2 * 128000;
  SimOptions o;
  o.mode = Mode::kOff;
  o.busiest_links = 100;
  absl::StatusOr<ModeResult> r = Simulate(ExactBed(2, 3), Load(c), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->busiest.size(), 4u);  // both directions of both uplinks
  for (const LinkUse& u : r->busiest) EXPECT_NEAR(u.bytes_per_iteration, per_host, 1e-3) << u.name;

  // One stage per host (dp-inner): only the activations and their gradients
  // cross, M x 125 KiB per replica and direction; stage 1's host sends and
  // receives both stage 0's and stage 2's.
  c.order = hybrid::Order::kDpInner;
  r = Simulate(ExactBed(3, 2), Load(c), o);
  ASSERT_TRUE(r.ok()) << r.status();
  const double p2p = 2 * 4 * 128000;
  ASSERT_EQ(r->busiest.size(), 6u);
  EXPECT_NEAR(r->busiest[0].bytes_per_iteration, 2 * p2p, 1e-3);
  EXPECT_THAT(r->busiest[0].name, HasSubstr("h1/"));
  EXPECT_NEAR(r->busiest[5].bytes_per_iteration, p2p, 1e-3);

  // Everything on one host: nothing on the wire.
  r = Simulate(ExactBed(1, 6), Load(c), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->busiest.empty());
}

TEST(HybridExampleSim, BadConfigsAreNamed) {
  hybrid::Config bad = Small(2, 1, hybrid::Schedule::k1F1B);
  bad.warmup = bad.iterations;
  absl::StatusOr<Workload> w = HybridExampleWorkload(bad);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("--warmup"));
  // More ranks than the cluster holds.
  const hybrid::Config c = Small(2, 2, hybrid::Schedule::k1F1B);
  absl::StatusOr<ModeResult> r = Simulate(ExactBed(1, 2), Load(c), SimOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("4 ranks but cluster testbed has 2"));
}

}  // namespace
}  // namespace trirace::sim
