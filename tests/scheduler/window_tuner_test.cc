// The online tuner (scheduler/window_tuner.h) on synthetic links with an
// explicit clock: what it reacts to, its bounds, its convergence, and that
// it behaves the same at link rates three orders of magnitude apart.
#include "scheduler/window_tuner.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace trirace::sched {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int kDense = ClassIndex(TrafficClass::kDense);
constexpr int kP2P = ClassIndex(TrafficClass::kP2P);

// One link driven through the calls the engine makes, with the link state
// set by hand between them.
class SyntheticLink {
 public:
  SyntheticLink(double capacity, WindowTunerConfig config) : tuner_(config), links_(1) {
    links_[0].id = 0;
    links_[0].name = "nic send";
    links_[0].capacity_bytes_per_s = capacity;
  }

  WindowTuner& tuner() { return tuner_; }
  LinkState& state() { return links_[0]; }
  int64_t now() const { return now_; }
  double capacity() const { return links_[0].capacity_bytes_per_s; }

  // Moves the clock to `t`; the state until then is the current one (with
  // a fresh occupancy sample of `measured_` bytes/s, if set).
  void AdvanceTo(int64_t t) {
    now_ = t;
    if (measured_ >= 0) {
      links_[0].measured_bytes_per_s = measured_;
      links_[0].occupancy_ns = now_;
    }
    tuner_.Observe(now_, links_);
  }
  // From now on the occupancy reader measures `bytes_per_s` (< 0: no samples).
  void Measure(double bytes_per_s) { measured_ = bytes_per_s; }
  // Sets DENSE held / running and P2P running from now on.
  void Set(int dense_pending, int dense_running, int p2p_running) {
    tuner_.Observe(now_, links_);
    links_[0].pending[kDense] = dense_pending;
    links_[0].running[kDense] = dense_running;
    links_[0].running[kP2P] = p2p_running;
  }
  // A task of `cls` with `bytes` that started at `start` completes now.
  void Complete(TrafficClass cls, uint64_t bytes, int64_t start, ReleaseReason reason = ReleaseReason::kUngated,
                bool receives = true) {
    Task t;
    t.spec.traffic_class = cls;
    t.spec.bytes = bytes;
    t.spec.links = {0};
    t.spec.receives = receives;
    t.release_ns = start;
    t.reason = reason;
    tuner_.Observe(now_, links_);
    tuner_.OnComplete(t, start, now_, links_);
  }
  // A P2P of `bytes` that starts now and takes `times` its wire time (plus
  // the floor); a send when !receives.
  void RunP2P(uint64_t bytes, double times, bool receives = true) {
    const int64_t start = now_;
    AdvanceTo(start + static_cast<int64_t>(static_cast<double>(Unit(bytes)) * times));
    Complete(TrafficClass::kP2P, bytes, start, ReleaseReason::kUngated, receives);
  }
  // A DENSE released by its credit completes, the interval ends at `end`,
  // and the tuner decides.
  std::vector<TuningChange> EndWithCreditDense(int64_t end) {
    Complete(TrafficClass::kDense, 1000, 0, ReleaseReason::kDenseCredit);
    AdvanceTo(end);
    return Adjust();
  }
  std::vector<TuningChange> Adjust() {
    std::vector<TuningChange> changes;
    tuner_.Adjust(now_, links_, &changes);
    return changes;
  }
  // Wire time of `bytes` plus the latency floor: a sample's unit.
  int64_t Unit(uint64_t bytes) const {
    return static_cast<int64_t>(static_cast<double>(bytes) / capacity() * 1e9) + WindowTuner::kLatencyFloorNs;
  }

 private:
  WindowTuner tuner_;
  std::vector<LinkState> links_;
  int64_t now_ = 0;
  double measured_ = -1;
};

WindowTunerConfig Enabled() {
  WindowTunerConfig c;
  c.enabled = true;
  c.interval_ns = 100 * kMs;
  return c;
}

// One 100 ms interval on a link where DENSE, released by `reason`, shares
// the first 60 ms with P2P that runs `slowdown` times slower than the P2P
// alone in the last 40 ms (DENSE then waits in a gap). Few bytes complete,
// so the link always has room.
std::vector<TuningChange> SharedInterval(SyntheticLink& link, double slowdown, ReleaseReason reason,
                                         uint64_t p2p_bytes) {
  const int64_t t0 = link.now();
  const int64_t unit = link.Unit(p2p_bytes);
  const auto beside = static_cast<int64_t>(static_cast<double>(unit) * slowdown);
  link.Set(1, 1, 1);
  for (int j = 0; j < 4; ++j) {
    const int64_t start = t0 + j * 15 * kMs;
    link.AdvanceTo(start + beside);
    link.Complete(TrafficClass::kP2P, p2p_bytes, start);
  }
  link.AdvanceTo(t0 + 60 * kMs);
  link.Complete(TrafficClass::kDense, 1000, t0, reason);
  link.Set(1, 0, 0);
  const int64_t start = t0 + 65 * kMs;
  link.AdvanceTo(start + unit);
  link.Complete(TrafficClass::kP2P, p2p_bytes, start);
  link.AdvanceTo(t0 + 100 * kMs);
  return link.Adjust();
}

TEST(WindowTunerTest, DisabledTunerChangesNothing) {
  WindowTunerConfig config;  // enabled = false
  SyntheticLink link(37.5e6, config);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(SharedInterval(link, 3.0, ReleaseReason::kDenseCredit, 4096).empty());
  EXPECT_EQ(link.tuner().window_scale(0), 1);
  EXPECT_EQ(link.tuner().credit_scale(0), 1);
}

TEST(WindowTunerTest, SlowedP2PShrinksTheLimitThatReleasedDense) {
  SyntheticLink link(37.5e6, Enabled());
  link.AdvanceTo(0);
  std::vector<TuningChange> changes = SharedInterval(link, 2.0, ReleaseReason::kDenseCredit, 64 << 10);
  ASSERT_EQ(changes.size(), 1u);
  const TuningChange& c = changes[0];
  EXPECT_STREQ(c.why, "p2p-slowed");
  EXPECT_EQ(c.link_name, "nic send");
  EXPECT_NEAR(c.evidence.p2p_slowdown, 2.0, 0.01);
  EXPECT_EQ(c.evidence.samples, 4);
  EXPECT_DOUBLE_EQ(c.credit_before, 1);
  EXPECT_DOUBLE_EQ(c.credit_scale, 0.7);
  EXPECT_DOUBLE_EQ(c.window_scale, 1);  // no DENSE went into a gap
  EXPECT_NEAR(c.evidence.held_beside, 0.6, 0.01);
  EXPECT_NEAR(c.evidence.held_gap, 0.4, 0.01);

  changes = SharedInterval(link, 2.0, ReleaseReason::kDenseGap, 64 << 10);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_DOUBLE_EQ(changes[0].window_scale, 0.7);
  EXPECT_DOUBLE_EQ(changes[0].credit_scale, 0.7);
}

TEST(WindowTunerTest, HarmFromDenseThatPassedNoLimitChangesNothing) {
  SyntheticLink link(37.5e6, Enabled());
  link.AdvanceTo(0);
  // P2P is slowed, but the DENSE beside it went for its deadline: no limit
  // to shrink. There is room, yet harm was seen, so nothing grows either.
  const std::vector<TuningChange> changes = SharedInterval(link, 2.0, ReleaseReason::kDeadline, 64 << 10);
  EXPECT_TRUE(changes.empty());
}

TEST(WindowTunerTest, HarmNeedsMinSamplesAndTheyAccumulateAcrossIntervals) {
  WindowTunerConfig config = Enabled();
  config.min_samples = 6;  // one interval gives 4
  config.increase = 0;     // keep room from changing anything
  SyntheticLink link(37.5e6, config);
  link.AdvanceTo(0);
  EXPECT_TRUE(SharedInterval(link, 2.0, ReleaseReason::kDenseCredit, 4096).empty());
  const std::vector<TuningChange> changes = SharedInterval(link, 2.0, ReleaseReason::kDenseCredit, 4096);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].evidence.samples, 8);
  EXPECT_DOUBLE_EQ(changes[0].credit_scale, 0.7);
}

TEST(WindowTunerTest, WaitingDenseOnAnUnderusedLinkGrowsTheLimitItWaitedOn) {
  SyntheticLink link(37.5e6, Enabled());
  // DENSE waits in a gap all interval with nothing of ours on the link
  // (held back by foreign traffic, say): the window grows.
  link.AdvanceTo(0);
  link.Set(1, 0, 0);
  link.AdvanceTo(100 * kMs);
  std::vector<TuningChange> changes = link.Adjust();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_STREQ(changes[0].why, "window-room");
  EXPECT_DOUBLE_EQ(changes[0].window_scale, 1.25);
  EXPECT_DOUBLE_EQ(changes[0].credit_scale, 1);
  // Beside running P2P, on a link measured 30% busy: the credit grows.
  link.Measure(0.3 * 37.5e6);
  link.Set(1, 0, 1);
  for (int64_t t = 110; t <= 200; t += 10) link.AdvanceTo(t * kMs);
  changes = link.Adjust();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_STREQ(changes[0].why, "credit-room");
  EXPECT_DOUBLE_EQ(changes[0].credit_scale, 1.25);
  EXPECT_NEAR(changes[0].evidence.utilisation, 0.3, 1e-9);
}

TEST(WindowTunerTest, ABusyLinkGivesNoRoom) {
  SyntheticLink link(37.5e6, Enabled());
  link.AdvanceTo(0);
  // DENSE waits while ours run on the link all interval, unmeasured.
  link.Set(1, 1, 0);
  link.AdvanceTo(100 * kMs);
  EXPECT_TRUE(link.Adjust().empty());
  // Idle link, nothing waiting.
  link.Set(0, 0, 0);
  link.AdvanceTo(200 * kMs);
  EXPECT_TRUE(link.Adjust().empty());
  // DENSE waits, nothing of ours runs, but the link is measured 95% busy.
  link.Measure(0.95 * 37.5e6);
  link.Set(1, 0, 0);
  for (int64_t t = 210; t <= 300; t += 10) link.AdvanceTo(t * kMs);
  EXPECT_TRUE(link.Adjust().empty());
}

TEST(WindowTunerTest, AMeasuredIdleLinkGivesRoomThoughOurOpRuns) {
  // Our DENSE op runs all interval but waits for its peers: the reader
  // measures the link 20% busy, so the window grows. With the samples
  // gone stale, the running op counts as use again.
  SyntheticLink link(37.5e6, Enabled());
  link.Measure(0.2 * 37.5e6);
  link.AdvanceTo(0);
  link.Set(1, 1, 0);
  for (int64_t t = 10; t <= 100; t += 10) link.AdvanceTo(t * kMs);
  const std::vector<TuningChange> room = link.Adjust();
  ASSERT_EQ(room.size(), 1u);
  EXPECT_STREQ(room[0].why, "window-room");
  EXPECT_NEAR(room[0].evidence.utilisation, 0.2, 1e-9);
  link.Measure(-1);
  for (int64_t t = 110; t <= 200; t += 10) link.AdvanceTo(t * kMs);
  const std::vector<TuningChange> none = link.Adjust();
  EXPECT_TRUE(none.empty());
}

TEST(WindowTunerTest, WithoutP2PAloneHarmIsJudgedAgainstWireTime) {
  SyntheticLink link(37.5e6, Enabled());
  link.AdvanceTo(0);
  link.Set(1, 1, 1);  // DENSE never leaves the link
  for (int j = 0; j < 4; ++j) link.RunP2P(64 << 10, 2.0);
  const std::vector<TuningChange> changes = link.EndWithCreditDense(100 * kMs);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_STREQ(changes[0].why, "p2p-slowed");
  EXPECT_FALSE(changes[0].evidence.baseline);
  EXPECT_NEAR(changes[0].evidence.p2p_slowdown, 2.0, 0.01);
  EXPECT_DOUBLE_EQ(changes[0].credit_scale, 0.7);
}

TEST(WindowTunerTest, SendsAreNotTimed) {
  // Receives run 2x their wire time beside DENSE; sends complete once the
  // transport buffered them, 20x faster than their wire time. Were sends
  // samples, the fastest would hide the harm.
  SyntheticLink link(37.5e6, Enabled());
  link.AdvanceTo(0);
  link.Set(1, 1, 1);
  for (int j = 0; j < 4; ++j) {
    link.RunP2P(64 << 10, 0.05, /*receives=*/false);
    link.RunP2P(64 << 10, 2.0);
  }
  const std::vector<TuningChange> changes = link.EndWithCreditDense(100 * kMs);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_STREQ(changes[0].why, "p2p-slowed");
  EXPECT_EQ(changes[0].evidence.samples, 4);
  EXPECT_EQ(changes[0].evidence.too_fast, 0) << "sends are not even looked at";
  EXPECT_NEAR(changes[0].evidence.p2p_slowdown, 2.0, 0.01);
}

TEST(WindowTunerTest, TasksFasterThanTheLinkAreNoSamples) {
  // Receives that finish in a tenth of their wire time (their data had
  // arrived before they started) neither hide harm nor count.
  SyntheticLink link(37.5e6, Enabled());
  link.AdvanceTo(0);
  link.Set(1, 1, 1);
  for (int j = 0; j < 4; ++j) {
    link.RunP2P(64 << 10, 0.1);
    link.RunP2P(64 << 10, 2.0);
  }
  const std::vector<TuningChange> changes = link.EndWithCreditDense(100 * kMs);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].evidence.samples, 4);
  EXPECT_EQ(changes[0].evidence.too_fast, 4);
  EXPECT_NEAR(changes[0].evidence.p2p_slowdown, 2.0, 0.01);
}

TEST(WindowTunerTest, DecidesAtMostOncePerInterval) {
  SyntheticLink link(37.5e6, Enabled());
  link.AdvanceTo(0);
  link.Set(1, 0, 0);
  link.AdvanceTo(100 * kMs);
  EXPECT_EQ(link.Adjust().size(), 1u);
  link.AdvanceTo(150 * kMs);
  EXPECT_TRUE(link.Adjust().empty());
  link.AdvanceTo(200 * kMs);
  EXPECT_EQ(link.Adjust().size(), 1u);
}

TEST(WindowTunerTest, FactorsStayWithinTheirBounds) {
  WindowTunerConfig config = Enabled();
  config.min_scale = 0.3;
  config.max_scale = 2;
  SyntheticLink link(37.5e6, config);
  link.AdvanceTo(0);
  int changes = 0;
  for (int i = 0; i < 30; ++i) changes += static_cast<int>(SharedInterval(link, 5.0, ReleaseReason::kDenseGap, 4096).size());
  EXPECT_DOUBLE_EQ(link.tuner().window_scale(0), 0.3);
  EXPECT_LT(changes, 30);  // once at the bound, nothing more is reported
  link.Set(1, 0, 0);
  for (int i = 0; i < 30; ++i) {
    link.AdvanceTo(link.now() + 100 * kMs);
    link.Adjust();
  }
  EXPECT_DOUBLE_EQ(link.tuner().window_scale(0), 2);
}

// The synthetic link: P2P beside DENSE runs 1 + k * credit_scale times
// slower than alone, so a tolerance of 1.25 is met at credit_scale 0.25/k.
// Additive increase and multiplicative decrease must settle around it, at
// any link rate: samples are in units of wire time.
class ConvergenceTest : public ::testing::TestWithParam<double> {};

TEST_P(ConvergenceTest, CreditSettlesWhereP2PSlowdownMeetsTheTarget) {
  const double capacity = GetParam();
  constexpr double kK = 0.5;  // target met at credit 0.5
  SyntheticLink link(capacity, Enabled());
  link.AdvanceTo(0);
  std::vector<double> credit, slowdown;
  for (int i = 0; i < 200; ++i) {
    const double s = 1 + kK * link.tuner().credit_scale(0);
    SharedInterval(link, s, ReleaseReason::kDenseCredit, 256 << 10);
    credit.push_back(link.tuner().credit_scale(0));
    slowdown.push_back(s);
  }
  double mean = 0;
  for (int i = 100; i < 200; ++i) {
    // One AIMD step above and below the equilibrium, never further.
    EXPECT_GE(credit[i], 0.5 * 0.7 - 1e-9) << "interval " << i;
    EXPECT_LE(credit[i], 0.5 + 0.25 + 1e-9) << "interval " << i;
    mean += slowdown[i] / 100;
  }
  EXPECT_NEAR(mean, 1.25, 0.08);
  EXPECT_DOUBLE_EQ(link.tuner().window_scale(0), 1);  // DENSE never went into a gap here
}

// 300 Mbit/s and 400 Gbit/s.
INSTANTIATE_TEST_SUITE_P(Rates, ConvergenceTest, ::testing::Values(37.5e6, 50e9));

TEST(WindowTunerTest, SameDecisionsAtRatesThreeOrdersApart) {
  // The same scenario, with every duration scaled to the link's wire time,
  // gives the same factors on a 300 Mbit/s and a 400 Gbit/s link.
  auto run = [](double capacity) {
    SyntheticLink link(capacity, Enabled());
    link.AdvanceTo(0);
    std::vector<double> trail;
    const uint64_t bytes = static_cast<uint64_t>(capacity * 0.004);  // 4 ms of wire
    for (int i = 0; i < 40; ++i) {
      SharedInterval(link, i % 3 == 0 ? 1.6 : 1.1, ReleaseReason::kDenseCredit, bytes);
      trail.push_back(link.tuner().credit_scale(0));
    }
    return trail;
  };
  EXPECT_EQ(run(37.5e6), run(50e9));
}

}  // namespace
}  // namespace trirace::sched
