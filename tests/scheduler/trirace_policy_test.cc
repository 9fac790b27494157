// One test per trirace rule ([R1]..[R13] in scheduler/trirace_policy.h).
// Each names the line of trirace_policy.cc it pins: deleting or disabling
// that line makes the test fail.
#include "scheduler/trirace_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/env_guard.h"
#include "view_builder.h"

namespace trirace::sched {
namespace {

using ::testing::Optional;
using testing::ReasonFor;
using testing::ViewBuilder;

constexpr uint64_t kMiB = 1 << 20;
constexpr int64_t kMs = 1'000'000;

TriracePolicyConfig TestConfig() {
  TriracePolicyConfig c;
  c.dense_window_bytes = 8 * kMiB;
  c.dense_credit_bytes = 1 * kMiB;
  c.deadline_slack_ns = 1 * kMs;
  c.max_hold_ns = 5 * kMs;
  c.foreign_headroom = 0.1;
  c.occupancy_max_age_ns = 100 * kMs;
  return c;
}

// Pins [R1]: `out->releases.push_back({t->id, ReleaseReason::kP2P})`.
TEST(TriracePolicyTest, P2PIsNeverHeldEvenOnASaturatedLink) {
  ViewBuilder b;
  const LinkId nic = b.AddLink(1e9);
  b.SetForeign(nic, 1e9, 0);                             // the link is full of foreign traffic
  b.Running(TrafficClass::kDense, 64 * kMiB, {nic});    // and of our own DENSE
  const Task& p2p = b.Pending(TrafficClass::kP2P, 1 * kMiB, {nic});
  TriracePolicy policy(TestConfig());
  EXPECT_THAT(ReasonFor(b.Decide(policy, 10), p2p.id), Optional(ReleaseReason::kP2P));
}

// Pins [R2]: `out->releases.push_back({t->id, ReleaseReason::kOtherClass})`.
TEST(TriracePolicyTest, UnclassifiedTrafficIsNotHeld) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 1 * kMiB, {nic});
  const Task& other = b.Pending(TrafficClass::kOther, 32 * kMiB, {nic});
  TriracePolicy policy(TestConfig());
  EXPECT_THAT(ReasonFor(b.Decide(policy, 10), other.id), Optional(ReleaseReason::kOtherClass));
}

// Pins [R3]: the kSparse release, and SPARSE counting as higher-class
// activity in LinkState::HigherClassActive (used at "[R3] SPARSE counts
// here"): without it the older DENSE task would go as a gap.
TEST(TriracePolicyTest, SparseGoesAheadOfAnOlderDense) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  const Task& dense = b.Pending(TrafficClass::kDense, 2 * kMiB, {nic}, 0, /*comm=*/1);
  const Task& sparse = b.Pending(TrafficClass::kSparse, 2 * kMiB, {nic}, 1, /*comm=*/2);
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 10);
  EXPECT_THAT(ReasonFor(d, sparse.id), Optional(ReleaseReason::kSparse));
  EXPECT_EQ(ReasonFor(d, dense.id), std::nullopt) << "2 MiB exceeds the 1 MiB credit beside SPARSE";
}

// Pins [R4]: the window check in DenseFits (`within` with
// dense_window_bytes) and the kDenseGap release.
TEST(TriracePolicyTest, DenseFillsAnIdleLinkUpToTheWindow) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  const Task& a = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 0, 1);
  const Task& c = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 1, 2);
  const Task& e = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 2, 3);
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 10);
  EXPECT_THAT(ReasonFor(d, a.id), Optional(ReleaseReason::kDenseGap));
  EXPECT_THAT(ReasonFor(d, c.id), Optional(ReleaseReason::kDenseGap));
  EXPECT_EQ(ReasonFor(d, e.id), std::nullopt) << "a third 4 MiB chunk exceeds the 8 MiB window";
}

// Pins [R4] `alone_in_gap`: a task larger than the window still goes on an
// idle link, alone.
TEST(TriracePolicyTest, OversizedDenseGoesAloneIntoAGap) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  const Task& big = b.Pending(TrafficClass::kDense, 64 * kMiB, {nic}, 0, 1);
  const Task& next = b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, 0, 2);
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 10);
  EXPECT_THAT(ReasonFor(d, big.id), Optional(ReleaseReason::kDenseGap));
  EXPECT_EQ(ReasonFor(d, next.id), std::nullopt);
}

// Pins [R4]'s "on every link": one busy link of two holds the task.
TEST(TriracePolicyTest, DenseNeedsEveryLinkItCrosses) {
  ViewBuilder b;
  const LinkId mine = b.AddLink();
  const LinkId theirs = b.AddLink();
  b.Running(TrafficClass::kP2P, 1 * kMiB, {theirs});
  const Task& dense = b.Pending(TrafficClass::kDense, 2 * kMiB, {mine, theirs});
  TriracePolicy policy(TestConfig());
  EXPECT_EQ(ReasonFor(b.Decide(policy, 10), dense.id), std::nullopt);
}

// Pins [R5]: `higher ? config_.CreditBytes(...)` and the kDenseCredit
// reason: small DENSE may go beside active P2P, larger DENSE may not.
TEST(TriracePolicyTest, DenseWithinTheCreditGoesBesideP2P) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 8 * kMiB, {nic});
  const Task& small = b.Pending(TrafficClass::kDense, kMiB / 2, {nic}, 0, 1);
  const Task& large = b.Pending(TrafficClass::kDense, 2 * kMiB, {nic}, 0, 2);
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 10);
  EXPECT_THAT(ReasonFor(d, small.id), Optional(ReleaseReason::kDenseCredit));
  EXPECT_EQ(ReasonFor(d, large.id), std::nullopt);

  TriracePolicyConfig no_credit = TestConfig();
  no_credit.dense_credit_bytes = 0;
  no_credit.dense_credit_ns = 0;
  TriracePolicy strict(no_credit);
  EXPECT_EQ(ReasonFor(b.Decide(strict, 10), small.id), std::nullopt);
}

// Pins [R5]: the credit counts DENSE already in flight on the link.
TEST(TriracePolicyTest, CreditIsSharedWithDenseInFlight) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 1 * kMiB, {nic});
  b.Running(TrafficClass::kDense, 3 * kMiB / 4, {nic});
  const Task& dense = b.Pending(TrafficClass::kDense, kMiB / 2, {nic});
  TriracePolicy policy(TestConfig());
  EXPECT_EQ(ReasonFor(b.Decide(policy, 10), dense.id), std::nullopt);
}

// Pins [R10]: `!config_.wire_class_priority && link->HigherClassActive()`:
// with the wire ordering the classes, DENSE beside P2P and SPARSE is limited
// by the window, not the credit, and goes as into a gap.
TEST(TriracePolicyTest, WireClassPriorityLetsDenseGoBesideHigherClasses) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 1 * kMiB, {nic});
  b.Pending(TrafficClass::kSparse, 1 * kMiB, {nic}, 0, 5);
  b.Running(TrafficClass::kDense, 2 * kMiB, {nic});
  const Task& dense = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 0, 1);
  TriracePolicy plain(TestConfig());
  EXPECT_EQ(ReasonFor(b.Decide(plain, 10), dense.id), std::nullopt) << "over the 1 MiB credit";

  TriracePolicyConfig wire = TestConfig();
  wire.wire_class_priority = true;
  TriracePolicy ordered(wire);
  EXPECT_THAT(ReasonFor(b.Decide(ordered, 10), dense.id), Optional(ReleaseReason::kDenseGap));

  const Task& big = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 0, 2);
  EXPECT_EQ(ReasonFor(b.Decide(ordered, 10), big.id), std::nullopt)
      << "2 + 4 + 4 MiB exceeds the 8 MiB window: the window still applies";
}

// Pins [R10]'s `inflight -= ... SameCommDense(...)`: with the wire ordering
// the classes, DENSE of the task's own comm still running does not count
// against the window (the comm's stream runs it first anyway: a framework
// queues step i's all-reduce while step i - 1's is still on the stream, and
// a hold then only ends at the hold bound); another comm's does. Without
// class priority the comm's own counts, as before.
TEST(TriracePolicyTest, WireClassPriorityDoesNotHoldDenseBehindItsOwnComm) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kDense, 64 * kMiB, {nic}, /*comm=*/7);  // the previous step's, queued on the stream
  const Task& next = b.Pending(TrafficClass::kDense, 64 * kMiB, {nic}, 0, /*comm=*/7);
  TriracePolicyConfig wire = TestConfig();
  wire.wire_class_priority = true;
  TriracePolicy ordered(wire);
  EXPECT_THAT(ReasonFor(b.Decide(ordered, 1 * kMs), next.id), Optional(ReleaseReason::kDenseGap));
  TriracePolicy plain(TestConfig());
  EXPECT_EQ(ReasonFor(b.Decide(plain, 1 * kMs), next.id), std::nullopt) << "no class priority: the gap rule holds";

  ViewBuilder other;
  const LinkId nic2 = other.AddLink();
  other.Running(TrafficClass::kDense, 64 * kMiB, {nic2}, /*comm=*/8);
  const Task& held = other.Pending(TrafficClass::kDense, 64 * kMiB, {nic2}, 0, /*comm=*/7);
  EXPECT_EQ(ReasonFor(other.Decide(ordered, 1 * kMs), held.id), std::nullopt) << "another comm's DENSE fills the window";

  // Only the comm's own bytes are taken off: 4 MiB of comm 8 plus the task
  // must still fit the 8 MiB window.
  ViewBuilder mixed;
  const LinkId nic3 = mixed.AddLink();
  mixed.Running(TrafficClass::kDense, 64 * kMiB, {nic3}, /*comm=*/7);
  mixed.Running(TrafficClass::kDense, 4 * kMiB, {nic3}, /*comm=*/8);
  Task& fits = mixed.Pending(TrafficClass::kDense, 3 * kMiB, {nic3}, 0, /*comm=*/7);
  EXPECT_THAT(ReasonFor(mixed.Decide(ordered, 1 * kMs), fits.id), Optional(ReleaseReason::kDenseGap));
  fits.spec.bytes = 6 * kMiB;
  EXPECT_EQ(ReasonFor(mixed.Decide(ordered, 1 * kMs), fits.id), std::nullopt) << "4 + 6 MiB exceeds the window";
}

// Pins `dense_held_[id] = 1` ([R7] over [R10]'s exemption): a comm whose
// own DENSE is running does not pass, by the exemption, a front-layer task
// of another comm that is held on the same link.
TEST(TriracePolicyTest, TheOwnCommExemptionDoesNotPassAFrontLayerHeldAhead) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kDense, 64 * kMiB, {nic}, /*comm=*/1);
  Task& back = b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, 0, /*comm=*/1);
  back.spec.tag.layer = 5;
  Task& front = b.Pending(TrafficClass::kDense, 64 * kMiB, {nic}, 0, /*comm=*/2);
  front.spec.tag.layer = 0;
  TriracePolicyConfig wire = TestConfig();
  wire.wire_class_priority = true;
  TriracePolicy ordered(wire);
  const Decision d = b.Decide(ordered, 1 * kMs);
  EXPECT_EQ(ReasonFor(d, front.id), std::nullopt) << "comm 1's 64 MiB fill the window";
  EXPECT_EQ(ReasonFor(d, back.id), std::nullopt) << "layer 5 does not pass layer 0";
  front.spec.tag.layer = 9;  // now behind comm 1's task by [R7]
  EXPECT_THAT(ReasonFor(b.Decide(ordered, 1 * kMs), back.id), Optional(ReleaseReason::kDenseGap));
}

// Pins [R6]: `deadline - config_.deadline_slack_ns <= now` -> kDeadline, and
// the wake-up at deadline - slack.
TEST(TriracePolicyTest, ExplicitDeadlineReleasesDenseRegardlessOfLinks) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 8 * kMiB, {nic});
  Task& urgent = b.Pending(TrafficClass::kDense, 8 * kMiB, {nic}, 0, 1);
  urgent.spec.deadline_ns = 1 * kMs + kMs / 2;
  Task& later = b.Pending(TrafficClass::kDense, 8 * kMiB, {nic}, 0, 2);
  later.spec.deadline_ns = 4 * kMs;
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 1 * kMs);
  EXPECT_THAT(ReasonFor(d, urgent.id), Optional(ReleaseReason::kDeadline));
  EXPECT_EQ(ReasonFor(d, later.id), std::nullopt);
  EXPECT_EQ(d.next_wake_ns, 3 * kMs) << "woken at deadline - slack";
}

// Pins [R6] EffectiveDeadlineNs: iteration-derived deadlines.
TEST(TriracePolicyTest, DeadlineFollowsTheIterationTag) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 8 * kMiB, {nic});
  Task& old_step = b.Pending(TrafficClass::kDense, 8 * kMiB, {nic}, 0, 1);
  old_step.spec.tag.iteration = 3;
  Task& this_step = b.Pending(TrafficClass::kDense, 8 * kMiB, {nic}, 0, 2);
  this_step.spec.tag.iteration = 4;
  b.iteration() = {.current = 4, .start_ns = 0, .period_ns = 10 * kMs};
  TriracePolicyConfig c = TestConfig();
  c.max_hold_ns = 100 * kMs;
  TriracePolicy policy(c);
  Decision d = b.Decide(policy, 1 * kMs);
  EXPECT_THAT(ReasonFor(d, old_step.id), Optional(ReleaseReason::kDeadline)) << "iteration 4 already began";
  EXPECT_EQ(ReasonFor(d, this_step.id), std::nullopt);
  d = b.Decide(policy, 9 * kMs);  // due at start + period = 10 ms, slack 1 ms
  EXPECT_THAT(ReasonFor(d, this_step.id), Optional(ReleaseReason::kDeadline));
}

// Pins [R7]: the layer-first sort of DENSE candidates.
TEST(TriracePolicyTest, FrontLayersFirstAmongDense) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  Task& back = b.Pending(TrafficClass::kDense, 6 * kMiB, {nic}, 0, 1);
  back.spec.tag.layer = 7;
  Task& front = b.Pending(TrafficClass::kDense, 6 * kMiB, {nic}, 1, 2);
  front.spec.tag.layer = 1;
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 10);
  EXPECT_THAT(ReasonFor(d, front.id), Optional(ReleaseReason::kDenseGap));
  EXPECT_EQ(ReasonFor(d, back.id), std::nullopt) << "only one 6 MiB task fits the 8 MiB window";
}

// Per-comm order: a later task of a comm is not a candidate before its head.
TEST(TriracePolicyTest, OnlyCommHeadsAreDenseCandidates) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  const Task& head = b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, 0, 1);
  const Task& second = b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, 0, 1);
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 10);
  EXPECT_TRUE(ReasonFor(d, head.id).has_value());
  EXPECT_EQ(ReasonFor(d, second.id), std::nullopt);
}

// Pins [R8]: `now - t->enqueue_ns >= max_hold` -> kMaxHold, and its wake-up.
TEST(TriracePolicyTest, MaxHoldReleasesABlockedDense) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 8 * kMiB, {nic});
  const Task& dense = b.Pending(TrafficClass::kDense, 8 * kMiB, {nic}, /*enqueue_ns=*/2 * kMs);
  TriracePolicy policy(TestConfig());
  Decision d = b.Decide(policy, 6 * kMs);
  EXPECT_EQ(ReasonFor(d, dense.id), std::nullopt);
  EXPECT_EQ(d.next_wake_ns, 7 * kMs);
  d = b.Decide(policy, 7 * kMs);
  EXPECT_THAT(ReasonFor(d, dense.id), Optional(ReleaseReason::kMaxHold));
}

// [R8] with max_hold_ns = 0 in the config: the engine's bound from the view.
TEST(TriracePolicyTest, MaxHoldDefaultsToTheEngineBound) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 8 * kMiB, {nic});
  const Task& dense = b.Pending(TrafficClass::kDense, 8 * kMiB, {nic}, 0);
  TriracePolicyConfig c = TestConfig();
  c.max_hold_ns = 0;
  TriracePolicy policy(c);
  EXPECT_THAT(ReasonFor(b.Decide(policy, 3 * kMs, /*max_hold_ns=*/3 * kMs), dense.id),
              Optional(ReleaseReason::kMaxHold));
}

// Pins [R9]: `limit *= std::max(0.0, free) / ...`: foreign traffic above
// 1 - headroom of the capacity leaves a zero limit and keeps DENSE off the
// link; a stale sample is ignored.
TEST(TriracePolicyTest, ForeignOccupancyHoldsDense) {
  ViewBuilder b;
  const LinkId nic = b.AddLink(10e9);
  const Task& dense = b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, /*enqueue_ns=*/4 * kMs);
  TriracePolicy policy(TestConfig());
  b.SetForeign(nic, 9.5e9, 5 * kMs);
  EXPECT_EQ(ReasonFor(b.Decide(policy, 6 * kMs), dense.id), std::nullopt);
  b.SetForeign(nic, 0, 5 * kMs);
  EXPECT_THAT(ReasonFor(b.Decide(policy, 6 * kMs), dense.id), Optional(ReleaseReason::kDenseGap));
  b.SetForeign(nic, 9.5e9, 5 * kMs);
  EXPECT_THAT(ReasonFor(b.Decide(policy, 200 * kMs), dense.id), Optional(ReleaseReason::kMaxHold))
      << "hold bound still applies";
  TriracePolicyConfig no_hold = TestConfig();
  no_hold.max_hold_ns = 1000 * kMs;
  TriracePolicy stale(no_hold);
  EXPECT_THAT(ReasonFor(b.Decide(stale, 200 * kMs), dense.id), Optional(ReleaseReason::kDenseGap))
      << "a sample 195 ms old is ignored";
}

// Pins [R9] (the same line): moderate foreign traffic shrinks the window.
TEST(TriracePolicyTest, ForeignOccupancyShrinksTheWindow) {
  ViewBuilder b;
  const LinkId nic = b.AddLink(10e9);
  const Task& a = b.Pending(TrafficClass::kDense, 3 * kMiB, {nic}, 0, 1);
  const Task& c = b.Pending(TrafficClass::kDense, 3 * kMiB, {nic}, 0, 2);
  b.SetForeign(nic, 4.5e9, 0);  // free = 1 - 0.1 - 0.45: window 8 MiB -> 4 MiB
  TriracePolicy policy(TestConfig());
  const Decision d = b.Decide(policy, 10);
  EXPECT_TRUE(ReasonFor(d, a.id).has_value());
  EXPECT_EQ(ReasonFor(d, c.id), std::nullopt);
}

// Pins [R13]: `foreign_urgent` in DenseFits: another process's SPARSE in
// flight on the NIC limits DENSE to the credit, as our own would; a stale
// sample, a gauge of 0 or an unknown one (-1) does not, nor does it under
// wire class priority.
TEST(TriracePolicyTest, AnotherProcesssUrgentTrafficLimitsDenseToTheCredit) {
  ViewBuilder b;
  const LinkId nic = b.AddLink(10e9);
  const Task& dense = b.Pending(TrafficClass::kDense, 2 * kMiB, {nic}, 0);
  TriracePolicyConfig c = TestConfig();
  c.max_hold_ns = 100 * kMs;
  TriracePolicy policy(c);
  b.SetForeignUrgent(nic, 256 << 10, 8 * kMs);
  EXPECT_EQ(ReasonFor(b.Decide(policy, 10 * kMs), dense.id), std::nullopt)
      << "2 MiB exceeds the 1 MiB credit beside another process's SPARSE";
  EXPECT_EQ(ReasonFor(b.Decide(policy, 10 * kMs), dense.id), std::nullopt);
  EXPECT_THAT(ReasonFor(b.Decide(policy, 14 * kMs), dense.id), Optional(ReleaseReason::kDenseGap))
      << "a gauge 6 ms old is ignored";
  for (int64_t gauge : {int64_t{0}, int64_t{-1}}) {
    b.SetForeignUrgent(nic, gauge, 8 * kMs);
    EXPECT_THAT(ReasonFor(b.Decide(policy, 10 * kMs), dense.id), Optional(ReleaseReason::kDenseGap)) << gauge;
  }
  b.SetForeignUrgent(nic, 256 << 10, 8 * kMs);
  const Task& small = b.Pending(TrafficClass::kDense, kMiB / 2, {nic}, 1, /*comm=*/2);
  EXPECT_THAT(ReasonFor(b.Decide(policy, 10 * kMs), small.id), Optional(ReleaseReason::kDenseCredit));
  c.wire_class_priority = true;
  TriracePolicy with_wire(c);
  EXPECT_THAT(ReasonFor(b.Decide(with_wire, 10 * kMs), dense.id), Optional(ReleaseReason::kDenseGap));
}

// [R13]'s age follows the engine's sampling period: a gauge stays fresh
// for 2.5 periods, never less than 5 ms.
TEST(TriracePolicyTest, TheUrgentGaugesAgeFollowsTheSamplingPeriod) {
  EXPECT_EQ(TriracePolicyConfig::UrgentMaxAgeNs(100'000), 5 * kMs);
  EXPECT_EQ(TriracePolicyConfig::UrgentMaxAgeNs(2 * kMs), 5 * kMs);
  EXPECT_EQ(TriracePolicyConfig::UrgentMaxAgeNs(20 * kMs), 50 * kMs);
  EnvGuard env;
  env.Set("TRIRACE_OCCUPANCY_PERIOD_US", "20000").Apply();
  EXPECT_EQ(TriracePolicyConfig::FromParams().urgent_max_age_ns, 50 * kMs);
  env.Set("TRIRACE_OCCUPANCY_PERIOD_US", "2000").Apply();
  EXPECT_EQ(TriracePolicyConfig::FromParams().urgent_max_age_ns, 5 * kMs);
  env.Set("TRIRACE_OCCUPANCY_PERIOD_US", "1000000").Apply();
  const TriracePolicyConfig slow = TriracePolicyConfig::FromParams();
  EXPECT_EQ(slow.urgent_max_age_ns, slow.occupancy_max_age_ns) << "never older than [R9] accepts a sample";
}

TEST(TriracePolicyTest, DenseWithoutModelledLinksIsNeverHeld) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 8 * kMiB, {nic});
  const Task& local = b.Pending(TrafficClass::kDense, 64 * kMiB, {});
  TriracePolicy policy(TestConfig());
  EXPECT_THAT(ReasonFor(b.Decide(policy, 10), local.id), Optional(ReleaseReason::kDenseGap));
}

// Pins [R12]: `* link->window_scale` and `* link->credit_scale`: the
// tuner's factors widen or narrow each limit on their own link only.
TEST(TriracePolicyTest, TunerFactorsScaleWindowAndCreditPerLink) {
  ViewBuilder b;
  const LinkId tuned = b.AddLink();
  const LinkId plain = b.AddLink();
  b.SetScales(tuned, 1.5, 0.25);
  const Task& wide = b.Pending(TrafficClass::kDense, 6 * kMiB, {tuned}, 0, 1);
  const Task& wide2 = b.Pending(TrafficClass::kDense, 6 * kMiB, {tuned}, 0, 2);
  const Task& narrow = b.Pending(TrafficClass::kDense, 6 * kMiB, {plain}, 0, 3);
  const Task& narrow2 = b.Pending(TrafficClass::kDense, 6 * kMiB, {plain}, 0, 4);
  TriracePolicy policy(TestConfig());
  Decision d = b.Decide(policy, 10);
  // 12 MiB fit the tuned link's 1.5 x 8 MiB window; the plain one keeps 8 MiB.
  EXPECT_THAT(ReasonFor(d, wide.id), Optional(ReleaseReason::kDenseGap));
  EXPECT_THAT(ReasonFor(d, wide2.id), Optional(ReleaseReason::kDenseGap));
  EXPECT_THAT(ReasonFor(d, narrow.id), Optional(ReleaseReason::kDenseGap));
  EXPECT_EQ(ReasonFor(d, narrow2.id), std::nullopt);

  ViewBuilder beside;
  const LinkId nic = beside.AddLink();
  beside.Running(TrafficClass::kP2P, 1 * kMiB, {nic});
  const Task& half = beside.Pending(TrafficClass::kDense, kMiB / 2, {nic}, 0, 1);
  TriracePolicy again(TestConfig());
  EXPECT_THAT(ReasonFor(beside.Decide(again, 10), half.id), Optional(ReleaseReason::kDenseCredit));
  beside.SetScales(nic, 1, 0.25);  // credit 256 KiB
  EXPECT_EQ(ReasonFor(beside.Decide(again, 10), half.id), std::nullopt);
}

}  // namespace
}  // namespace trirace::sched
