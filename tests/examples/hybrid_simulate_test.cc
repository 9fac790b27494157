// The training-loop simulation (examples/hybrid_parallel/simulate.h):
// iteration times that can be worked out by hand, what class priority does
// on a shared link, and its errors.
#include <string>

#include "config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulate.h"

namespace hybrid {
namespace {

using ::testing::Each;
using ::testing::DoubleNear;
using ::testing::HasSubstr;

// 1 Gbit/s = 125 bytes per microsecond: 125 KiB take 1024 us.
constexpr double kGbps = 1;

Config Small(int stages, int replicas, Schedule schedule) {
  Config c;
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

SimResult Simulate(const Config& c, int per_host, WireOrder order = WireOrder::kClassPriority) {
  SimResult r;
  std::string error;
  EXPECT_TRUE(SimulateTraining(c, {per_host, kGbps, order}, &r, &error)) << error;
  return r;
}

TEST(HybridSimulate, OnOneHostAFlushedIterationIsTheFillTheMicroBatchesAndTheDrain) {
  // (M + S - 1) (F + B) = (4 + 1) x 3 ms.
  const Config c = Small(2, 1, Schedule::k1F1B);
  EXPECT_THAT(Simulate(c, 2).iteration_ms, Each(DoubleNear(15.0, 1e-6)));
}

TEST(HybridSimulate, OnOneHostThe2BWPipelineRunsAtTheComputeRate) {
  // No flush: after the first fill, M (F + B) per iteration.
  const Config c = Small(2, 1, Schedule::k2BW);
  EXPECT_NEAR(Simulate(c, 2).median_ms, 12.0, 1e-6);
}

TEST(HybridSimulate, TheHostWaitsOnlyForIterationEndsItHasIssued) {
  // 2BW issues an iteration's first forwards before the previous one's
  // last backwards, so with no run-ahead (lookahead 0) some stages begin an
  // iteration whose predecessor's end they have not issued: no wait there,
  // as the trainer's host wait on an unrecorded event. Waiting can only
  // delay, so the pipeline is no faster than with a step of run-ahead.
  Config c = Small(2, 2, Schedule::k2BW);
  c.lookahead = 1;
  const double ahead = Simulate(c, 2).median_ms;
  c.lookahead = 0;
  const SimResult in_step = Simulate(c, 2);
  EXPECT_EQ(in_step.iteration_ms.size(), static_cast<size_t>(c.iterations));
  EXPECT_GE(in_step.median_ms, ahead - 1e-6);
}

TEST(HybridSimulate, ActivationsCrossTheLinkAtItsRate) {
  // One micro-batch over two hosts: F0, activation (1024 us), F1, B1,
  // gradient (1024 us), B0.
  Config c = Small(2, 1, Schedule::k1F1B);
  c.micro_batches = 1;
  EXPECT_THAT(Simulate(c, 1).iteration_ms, Each(DoubleNear(8.048, 1e-6)));
}

TEST(HybridSimulate, MessagesOnOneConnectionArriveInTheOrderTheyWereSent) {
  // Two stages on two hosts, no compute, 4 micro-batches. Sends are eager,
  // so stage 0 posts activations 0 and 1 at once; a TCP stream moves them
  // one after the other, activation 0 in 1024 us. Then every step is an
  // activation one way beside a gradient the other way: (M + 1) x 1024 us.
  // Sharing the link between the two activations would deliver activation
  // 0 only after 2048 us, and every step after it would wait for the
  // gradient of the step before: 8.192 ms.
  Config c = Small(2, 1, Schedule::k1F1B);
  c.fwd_us = 0;
  c.bwd_us = 0;
  EXPECT_THAT(Simulate(c, 1).iteration_ms, Each(DoubleNear(5.12, 1e-6)));
  EXPECT_THAT(Simulate(c, 1, WireOrder::kShared).iteration_ms, Each(DoubleNear(5.12, 1e-6)));
}

TEST(HybridSimulate, ATokenBucketLetsABurstGoAtLineRateAfterIdling) {
  // 112500 tokens drain at line - rate = 1125 B/us: 100 us at 1250 B/us
  // carry 125000 bytes; the other 3000 go at 125 B/us (24 us). Both
  // transfers find their links idle and their buckets refilled.
  Config c = Small(2, 1, Schedule::k1F1B);
  c.micro_batches = 1;
  SimResult r;
  std::string error;
  ASSERT_TRUE(SimulateTraining(c, {1, kGbps, WireOrder::kShared, 112500, 10 * kGbps}, &r, &error)) << error;
  EXPECT_THAT(r.iteration_ms, Each(DoubleNear(6.248, 1e-6)));
  // A bucket smaller than one frame is no bucket.
  ASSERT_TRUE(SimulateTraining(c, {1, kGbps, WireOrder::kShared, 100, 10 * kGbps}, &r, &error)) << error;
  EXPECT_THAT(r.iteration_ms, Each(DoubleNear(8.048, 1e-6)));
}

TEST(HybridSimulate, AFlushWaitsForTheAllReduceOnTheWire) {
  // Two replicas of one stage on two hosts: each sends 2 (D - 1) / D of its
  // 125 KiB of gradient, 1024 us, after its backward.
  Config c = Small(1, 2, Schedule::k1F1B);
  c.micro_batches = 1;
  EXPECT_THAT(Simulate(c, 1).iteration_ms, Each(DoubleNear(4.024, 1e-6)));
  // On one host the all-reduce costs nothing.
  EXPECT_THAT(Simulate(c, 2).iteration_ms, Each(DoubleNear(3.0, 1e-6)));
}

TEST(HybridSimulate, ClassPriorityHelpsWhereDenseAndP2PShareALinkAndNowhereElse) {
  std::string error;
  for (const char* preset : {"contention", "no-contention"}) {
    Config c;
    ASSERT_TRUE(ApplyPreset(preset, &c, &error)) << error;
    c.iterations = 8;
    c.warmup = 2;
    const double ideal = Simulate(c, 2, WireOrder::kClassPriority).median_ms;
    const double shared = Simulate(c, 2, WireOrder::kShared).median_ms;
    SCOPED_TRACE(preset);
    // The links, not the compute, bound both presets at 300 Mbit/s; at
    // 1 Gbit/s they are still loaded enough for the order to matter.
    if (std::string(preset) == "contention") {
      EXPECT_LT(ideal, shared * 0.99);
    } else {
      EXPECT_NEAR(ideal, shared, 1e-6);  // only P2P crosses hosts: nothing to order
    }
  }
}

// Rule [R14] in the ideal: with two stages of a replica per host, the front
// stage's all-reduce served ahead of the other's gets the next step going
// sooner; where no host holds two stages of one replica there is no front
// stage and nothing changes.
TEST(HybridSimulate, FrontStageFirstHelpsWhereStagesOfAReplicaShareAHostAndNowhereElse) {
  std::string error;
  for (const char* preset : {"megatron", "no-contention"}) {
    Config c;
    ASSERT_TRUE(ApplyPreset(preset, &c, &error)) << error;
    c.iterations = 8;
    c.warmup = 2;
    SCOPED_TRACE(preset);
    const double front = Simulate(c, 2, WireOrder::kFrontStageFirst).median_ms;
    const double by_class = Simulate(c, 2, WireOrder::kClassPriority).median_ms;
    if (std::string(preset) == "megatron") {
      EXPECT_LT(front, by_class * 0.99);
    } else {
      EXPECT_NEAR(front, by_class, 1e-6);  // dp-inner: a host holds one stage of each replica
    }
    // One rank per host: no host holds two stages.
    EXPECT_NEAR(Simulate(c, 1, WireOrder::kFrontStageFirst).median_ms,
                Simulate(c, 1, WireOrder::kClassPriority).median_ms, 1e-6);
  }
}

TEST(HybridSimulate, LinkBytesCountWhatCrossesBetweenHosts) {
  // An embedding stage and two dense stages, two replicas, one replica per
  // host (pp-inner): the pipeline's P2P stays inside a host and every
  // collective crosses. Per iteration a rank sends its peer: the ids
  // AllGather (D - 1) x 256 ids x 4 bytes x M, the AlltoAll of 8 KiB rows
  // forward and backward, 2 x 8192 x M, and per dense stage the ring
  // all-reduce 2(D - 1)/D x 125 KiB.
  Config c = Small(2, 2, Schedule::k1F1B);
  c.embedding = true;
  c.order = Order::kPpInner;
  c.sparse_kb = 8;
  c.sparse_indices = 256;
  const double per_host = 4 * 256 * 4 + 2 * 8192 * 4 + 2 * 128000;
  LinkBytes bytes;
  std::string error;
  ASSERT_TRUE(LinkBytesPerIteration(c, 3, &bytes, &error)) << error;
  EXPECT_THAT(bytes.tx, ::testing::ElementsAre(DoubleNear(per_host, 1e-6), DoubleNear(per_host, 1e-6)));
  EXPECT_THAT(bytes.rx, ::testing::ElementsAre(DoubleNear(per_host, 1e-6), DoubleNear(per_host, 1e-6)));

  // One stage per host (dp-inner): only the activations and their gradients
  // cross, M x 125 KiB per replica and direction; stage 0's host receives
  // the gradients, stage 2's sends them.
  c.order = Order::kDpInner;
  ASSERT_TRUE(LinkBytesPerIteration(c, 2, &bytes, &error)) << error;
  const double p2p = 2 * 4 * 128000;
  EXPECT_THAT(bytes.tx, ::testing::ElementsAre(DoubleNear(p2p, 1e-6), DoubleNear(2 * p2p, 1e-6),
                                               DoubleNear(p2p, 1e-6)));
  EXPECT_EQ(bytes.rx, bytes.tx);

  // Everything on one host: nothing on the wire.
  ASSERT_TRUE(LinkBytesPerIteration(c, 6, &bytes, &error)) << error;
  EXPECT_THAT(bytes.tx, ::testing::ElementsAre(0.0));
  EXPECT_FALSE(LinkBytesPerIteration(c, 4, &bytes, &error));
  EXPECT_THAT(error, HasSubstr("ranks per host 4"));
}

TEST(HybridSimulate, BadOptionsAreNamed) {
  const Config c = Small(2, 1, Schedule::k1F1B);
  SimResult r;
  std::string error;
  EXPECT_FALSE(SimulateTraining(c, {3, kGbps, WireOrder::kShared}, &r, &error));
  EXPECT_THAT(error, HasSubstr("ranks per host 3"));
  EXPECT_FALSE(SimulateTraining(c, {1, 0, WireOrder::kShared}, &r, &error));
  EXPECT_THAT(error, HasSubstr("link rate 0"));
  Config bad = c;
  bad.warmup = bad.iterations;
  EXPECT_FALSE(SimulateTraining(bad, {1, kGbps, WireOrder::kShared}, &r, &error));
  EXPECT_THAT(error, HasSubstr("--warmup"));
}

}  // namespace
}  // namespace hybrid
