// `trirace advise` (sim/run/advise.h): one observed run's traces to a
// decision. The traces here are the simulator's own off runs, which replay
// by dependencies (replay_round_trip_test.cc): for, against, and "cannot
// tell" when the cluster given is not the one the run had.
#include "sim/run/advise.h"

#include <filesystem>
#include <string>

#include "config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/run/trace_out.h"
#include "sim/workloads/hybrid_example.h"
#include "sim/workloads/models.h"
#include "sim/workloads/replay.h"
#include "sim/workloads/transformer.h"
#include "support/subprocess.h"

namespace trirace::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class AdviseTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing_support::MakeTempDir("trirace-advise-"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `w` in off on `name` with `options`, writes its traces, and
  // advises from them on the cluster `advise_options` makes.
  Advice TraceAndAdvise(const std::string& name, const ClusterOptions& options, const Workload& w,
                        const ClusterOptions& advise_options) {
    absl::StatusOr<Cluster> c = MakeCluster(name, options);
    EXPECT_TRUE(c.ok()) << c.status();
    c->compute_scale = 1;
    TraceOut trace;
    SimOptions o;
    o.trace = &trace;
    absl::StatusOr<ModeResult> ran = Simulate(*c, w, o);
    EXPECT_TRUE(ran.ok()) << ran.status();
    EXPECT_TRUE(trace.Write((dir_ / "trace.%r.json").string(), w).ok());
    ReplayStats stats;
    absl::StatusOr<Workload> replayed = ReplayWorkload(dir_.string(), &stats);
    EXPECT_TRUE(replayed.ok()) << replayed.status();
    const double measured = MedianAfterWarmup(stats.measured_iteration_ms, replayed->warmup);
    EXPECT_NEAR(measured, ran->iteration_ms_median, 1e-6) << "the traces' stamps measure the run";
    const auto make = [&](const ClusterOptions& co) -> absl::StatusOr<Cluster> {
      absl::StatusOr<Cluster> made = MakeCluster(name, co);
      if (made.ok()) made->compute_scale = 1;
      return made;
    };
    absl::StatusOr<Advice> a = Advise(make, advise_options, *replayed, measured);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *a : Advice{};
  }

  static Workload Preset(const std::string& preset) {
    hybrid::Config hc;
    std::string error;
    EXPECT_TRUE(hybrid::ParseArgs({"--preset", preset}, &hc, &error)) << error;
    absl::StatusOr<Workload> w = HybridExampleWorkload(hc);
    EXPECT_TRUE(w.ok()) << w.status();
    return *w;
  }

  fs::path dir_;
};

TEST_F(AdviseTest, OnContentionItSaysTurnItOnWithTheModeAndHow) {
  const Workload w = Preset("contention");
  const Advice a = TraceAndAdvise("testbed", {}, w, {});
  ASSERT_TRUE(a.reproduced) << a.decision;
  ASSERT_TRUE(a.recommended.has_value()) << a.decision;
  EXPECT_EQ(*a.recommended, Mode::kTrirace);
  EXPECT_THAT(a.decision, HasSubstr("turn it on: trirace (TRIRACE_MODE=schedule TRIRACE_POLICY=trirace)"));
  EXPECT_GT(a.exposed_share, 0.3);
  // Half and twice the rate, the QoS the other way, 2:1 oversubscription.
  ASSERT_EQ(a.what_ifs.size(), 4u);
  EXPECT_THAT(a.what_ifs[2].name, HasSubstr("no network QoS"));
  EXPECT_LT(a.what_ifs[2].best_speedup, 1.01) << "without QoS the marks buy nothing";
}

TEST_F(AdviseTest, WithoutContentionItSaysLeaveItOffAndWhy) {
  const Advice a = TraceAndAdvise("testbed", {}, Preset("no-contention"), {});
  ASSERT_TRUE(a.reproduced) << a.decision;
  EXPECT_FALSE(a.recommended.has_value()) << a.decision;
  EXPECT_THAT(a.decision, HasSubstr("leave it off: no mode gains 2%"));
  EXPECT_THAT(a.decision, HasSubstr("exposed communication"));
}

TEST_F(AdviseTest, A256GpuJobWhoseLinksAreNearlyIdleIsAdvisedAgainst) {
  ClusterOptions o;
  o.hosts = 32;
  absl::StatusOr<Cluster> c = MakeCluster("dgx-h100", o);
  ASSERT_TRUE(c.ok()) << c.status();
  TrainingSpec t;
  t.model = *BuiltinModel("gpt-1.3b");
  t.pp = 8;
  t.dp = 32;
  t.microbatches = 8;
  t.iterations = 2;
  t.warmup = 1;
  t.gpu = DefaultGpuProfile("dgx-h100");
  absl::StatusOr<Workload> w = TransformerWorkload(t, *c);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->ranks.size(), 256u);
  const Advice a = TraceAndAdvise("dgx-h100", o, *w, o);
  ASSERT_TRUE(a.reproduced) << a.decision;
  const ModeResult* off = a.comparison.Find(Mode::kOff);
  ASSERT_NE(off, nullptr);
  ASSERT_FALSE(off->busiest.empty());
  EXPECT_LT(off->busiest.front().utilisation, 0.2) << "the case the goal names: links under 20% busy";
  EXPECT_FALSE(a.recommended.has_value()) << a.decision;
}

TEST_F(AdviseTest, ATraceItCannotReproduceGetsCannotTellAndNoSpeedUp) {
  // The run had 300 Mbit/s; advised as if its links were ten times faster,
  // the replay of off misses the measured iteration by far.
  ClusterOptions fast;
  fast.gbps = 3;
  const Advice a = TraceAndAdvise("testbed", {}, Preset("contention"), fast);
  EXPECT_FALSE(a.reproduced);
  EXPECT_FALSE(a.recommended.has_value());
  EXPECT_TRUE(a.comparison.modes.empty()) << "no mode is predicted";
  EXPECT_THAT(a.decision, HasSubstr("cannot tell"));
  EXPECT_THAT(a.decision, HasSubstr("more than 10% apart"));
}

TEST(AdviseMedianTest, TheMedianLeavesTheWarmUpOut) {
  EXPECT_EQ(MedianAfterWarmup({100, 1, 3, 2}, 1), 2);
  EXPECT_EQ(MedianAfterWarmup({100, 1, 3, 2, 4}, 1), 2.5);
  EXPECT_EQ(MedianAfterWarmup({7}, 3), 7) << "a warm-up that leaves nothing: every iteration";
  EXPECT_EQ(MedianAfterWarmup({}, 0), 0);
}

}  // namespace
}  // namespace trirace::sim
