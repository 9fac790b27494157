// The scheduler's limits in wire time (issue #17): trirace's window and
// credit, the priority baseline's window, the chunk size and the hold bound
// mean the same milliseconds on a 300 Mbit/s link and on a 400 Gbit/s one
// (three orders of magnitude apart); byte values override; an unknown rate
// falls back to the byte defaults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/chunk_planner.h"
#include "scheduler/engine.h"
#include "scheduler/priority_policy.h"
#include "scheduler/trirace_policy.h"
#include "view_builder.h"

namespace trirace::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;
using testing::ReasonFor;
using testing::ViewBuilder;

constexpr int64_t kMs = 1'000'000;
constexpr double kSlow = 300e6 / 8;  // 300 Mbit/s in bytes/s
constexpr double kFast = 400e9 / 8;  // 400 Gbit/s

// `ms` of wire time at `rate`, in bytes.
uint64_t Wire(double ms, double rate) { return static_cast<uint64_t>(ms * 1e-3 * rate); }

class WireTimeAtTwoRates : public ::testing::TestWithParam<double> {};

// [R4], [R11]: 2 ms chunks into an idle link: three fit the 7 ms window,
// the fourth does not, at either rate.
TEST_P(WireTimeAtTwoRates, TheWindowIsTheSameMillisecondsOfWire) {
  const double rate = GetParam();
  ViewBuilder b;
  const LinkId nic = b.AddLink(rate);
  std::vector<TaskId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(b.Pending(TrafficClass::kDense, Wire(2, rate), {nic}, i, i + 1).id);
  TriracePolicy policy;  // the defaults: 7 ms window, 2 ms credit
  const Decision d = b.Decide(policy, 10);
  for (int i = 0; i < 3; ++i) EXPECT_THAT(ReasonFor(d, ids[i]), Optional(ReleaseReason::kDenseGap)) << i;
  EXPECT_EQ(ReasonFor(d, ids[3]), std::nullopt) << "8 ms of DENSE exceeds the 7 ms window";
}

// [R5], [R11]: beside P2P, 2 ms of credit: a 1.5 ms chunk goes, then no more.
TEST_P(WireTimeAtTwoRates, TheCreditIsTheSameMillisecondsOfWire) {
  const double rate = GetParam();
  ViewBuilder b;
  const LinkId nic = b.AddLink(rate);
  b.Running(TrafficClass::kP2P, Wire(1, rate), {nic});
  const Task& first = b.Pending(TrafficClass::kDense, Wire(1.5, rate), {nic}, 0, 1);
  const Task& second = b.Pending(TrafficClass::kDense, Wire(1, rate), {nic}, 1, 2);
  TriracePolicy policy;
  const Decision d = b.Decide(policy, 10);
  EXPECT_THAT(ReasonFor(d, first.id), Optional(ReleaseReason::kDenseCredit));
  EXPECT_EQ(ReasonFor(d, second.id), std::nullopt) << "2.5 ms beside P2P exceeds the 2 ms credit";
}

// The ByteScheduler-style baseline gets the same sizing: its window is 7 ms
// at the slowest link the task crosses.
TEST_P(WireTimeAtTwoRates, ThePriorityBaselinesWindowIsTheSameMilliseconds) {
  const double rate = GetParam();
  ViewBuilder b;
  const LinkId nic = b.AddLink(rate);
  const LinkId fast = b.AddLink(rate * 100);
  b.Running(TrafficClass::kDense, Wire(4, rate), {nic, fast});
  const Task& fits = b.Pending(TrafficClass::kDense, Wire(3, rate), {nic, fast}, 0, 1);
  const Task& over = b.Pending(TrafficClass::kDense, Wire(1, rate), {nic, fast}, 1, 2);
  PriorityPolicy policy;
  const Decision d = b.Decide(policy, 10);
  EXPECT_THAT(ReasonFor(d, fits.id), Optional(ReleaseReason::kPriority));
  EXPECT_EQ(ReasonFor(d, over.id), std::nullopt);
}

// The chunk size: 2 ms of the comm's slowest NIC, at least 64 KiB, in whole
// 4 KiB granules.
TEST_P(WireTimeAtTwoRates, TheChunkIsTheSameMillisecondsOfTheSlowestNic) {
  const double rate = GetParam();
  const uint64_t chunk = CommChunkBytes(0, 2 * kMs, 65536, 2, rate);
  EXPECT_EQ(chunk % kChunkGranuleBytes, 0u);
  EXPECT_LE(chunk, Wire(2, rate));
  EXPECT_GT(chunk, Wire(2, rate) - kChunkGranuleBytes);
}

INSTANTIATE_TEST_SUITE_P(Rates, WireTimeAtTwoRates, ::testing::Values(kSlow, kFast),
                         [](const ::testing::TestParamInfo<double>& p) {
                           return p.param == kSlow ? std::string("300Mbit") : std::string("400Gbit");
                         });

TEST(WireTimeTest, ByteOverridesWinAndAnUnknownRateFallsBack) {
  TriracePolicyConfig c;
  EXPECT_EQ(c.WindowBytes(0), TriracePolicyConfig::kFallbackWindowBytes);
  EXPECT_EQ(c.CreditBytes(0), TriracePolicyConfig::kFallbackCreditBytes);
  EXPECT_EQ(c.WindowBytes(kSlow), Wire(7, kSlow));
  c.dense_window_bytes = 256 << 10;
  c.dense_credit_bytes = 64 << 10;
  EXPECT_EQ(c.WindowBytes(kFast), 256u << 10);
  EXPECT_EQ(c.CreditBytes(kFast), 64u << 10);
  c.dense_credit_bytes = 0;
  c.dense_credit_ns = 0;
  EXPECT_EQ(c.CreditBytes(kFast), 0u) << "no credit";
  PriorityPolicyConfig p;
  EXPECT_EQ(p.WindowBytes(0), PriorityPolicyConfig::kFallbackWindowBytes);
  p.window_bytes = 1 << 20;
  EXPECT_EQ(p.WindowBytes(kSlow), 1u << 20);
}

// The rule reads only what every rank of a comm has identically: ranks
// whose own NICs differ get the same size from the same records, so their
// plans are equal call for call.
TEST(WireTimeTest, RanksWithDifferentLocalRatesPlanIdentically) {
  const double records_gbps[] = {100, 25, 400, 200};  // each rank's NIC, as exchanged
  double slowest = 0;
  for (double g : records_gbps) slowest = slowest == 0 ? g : std::min(slowest, g);
  std::vector<ChunkPlan> plans;
  for (double own : records_gbps) {
    (void)own;  // a rank's own rate is not an input
    const uint64_t chunk = CommChunkBytes(0, 2 * kMs, 65536, 2, slowest * 1e9 / 8);
    plans.push_back(PlanChunks(NcclFunc::kAllReduce, 100'000'000, 4, chunk));
  }
  for (const ChunkPlan& p : plans) EXPECT_EQ(p, plans.front());
  EXPECT_TRUE(plans.front().split());
  EXPECT_EQ(CommChunkBytes(0, 2 * kMs, 65536, 2, 100e6 / 8), 65536u) << "the floor on a slow link";
  EXPECT_EQ(CommChunkBytes(0, 2 * kMs, 65536, 1, 400e9 / 8), kUnagreedChunkBytes) << "one host: no NIC";
  EXPECT_EQ(CommChunkBytes(0, 2 * kMs, 65536, 2, 0), kUnagreedChunkBytes) << "no rate known";
  EXPECT_EQ(CommChunkBytes(0, 0, 65536, 2, kSlow), 0u) << "TRIRACE_CHUNK_US=0: never split";
  EXPECT_EQ(CommChunkBytes(12345, 2 * kMs, 65536, 2, kSlow), 12345u) << "TRIRACE_CHUNK_BYTES wins";
}

// Class priority on every rank's record leaves a comm across hosts whole;
// a fixed size still wins, and a comm inside one host keeps its constant.
TEST(WireTimeTest, EveryRankWithClassPriorityLeavesTheCollectiveWhole) {
  EXPECT_EQ(CommChunkBytes(0, 2 * kMs, 65536, 2, kSlow, /*every_rank_class_priority=*/true), 0u);
  EXPECT_GT(CommChunkBytes(0, 2 * kMs, 65536, 2, kSlow, false), 0u);
  EXPECT_EQ(CommChunkBytes(12345, 2 * kMs, 65536, 2, kSlow, true), 12345u) << "TRIRACE_CHUNK_BYTES wins";
  EXPECT_EQ(CommChunkBytes(0, 2 * kMs, 65536, 1, kSlow, true), kUnagreedChunkBytes) << "no NIC crossed";
  EXPECT_EQ(CommChunkBytes(0, 2 * kMs, 65536, 2, 0, true), 0u) << "no rate needed to leave it whole";
  EXPECT_FALSE(PlanChunks(NcclFunc::kAllReduce, 100'000'000, 4, CommChunkBytes(0, 2 * kMs, 65536, 2, kFast, true))
                   .split());
}

// The hold bound: TRIRACE_MAX_HOLD_US until a period is known, then the
// larger of it and TRIRACE_MAX_HOLD_FRACTION of the period.
TEST(WireTimeTest, TheHoldBoundIsAShareOfTheIterationPeriod) {
  ManualClock clock(0);
  class Opener : public GateOpener {
   public:
    void OpenGate(const ReleasedTask& t) override { released.push_back(t); }
    std::vector<ReleasedTask> released;
  } opener;
  TriracePolicyConfig strict;
  strict.dense_credit_ns = 0;
  Engine engine(std::make_unique<TriracePolicy>(strict), &opener,
                {.clock = &clock, .max_hold_ns = 5 * kMs, .max_hold_fraction = 0.1, .start_thread = false});
  EXPECT_EQ(engine.hold_bound_ns(), 5 * kMs);
  engine.BeginIteration(0);
  clock.SetNs(400 * kMs);
  engine.BeginIteration(1);
  EXPECT_EQ(engine.hold_bound_ns(), 40 * kMs) << "10% of a 400 ms step";
  const LinkId nic = engine.AddLink({.name = "nic", .capacity_bytes_per_s = kSlow});
  engine.Submit({.comm = 9, .traffic_class = TrafficClass::kP2P, .bytes = 1, .links = {nic}, .gated = false});
  const TaskId dense = engine.Submit({.comm = 1, .traffic_class = TrafficClass::kDense, .bytes = 1 << 20,
                                      .links = {nic}, .gated = true});
  clock.SetNs(400 * kMs + 39 * kMs);
  engine.Step();
  EXPECT_THAT(opener.released, IsEmpty()) << "held beyond TRIRACE_MAX_HOLD_US";
  clock.SetNs(400 * kMs + 40 * kMs);
  engine.Step();
  ASSERT_EQ(opener.released.size(), 1u);
  EXPECT_EQ(opener.released[0].id, dense);
  EXPECT_EQ(opener.released[0].reason, ReleaseReason::kMaxHold);
  // A short step keeps the floor.
  Engine fast(std::make_unique<TriracePolicy>(strict), &opener,
              {.clock = &clock, .max_hold_ns = 5 * kMs, .max_hold_fraction = 0.1, .start_thread = false});
  fast.BeginIteration(0);
  clock.AdvanceNs(20 * kMs);
  fast.BeginIteration(1);
  EXPECT_EQ(fast.hold_bound_ns(), 5 * kMs);
}

}  // namespace
}  // namespace trirace::sched
