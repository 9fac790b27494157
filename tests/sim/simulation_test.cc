// The simulator as a whole (sim/run/simulation.h): the same inputs give the
// same figures bit for bit; no mode beats the ideal and nothing the bound;
// the gated modes run the real engine and policies, in simulated time.
#include "sim/run/simulation.h"

#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/policy_factory.h"
#include "sim/run/compare.h"
#include "sim/workloads/hybrid_example.h"
#include "sim/workloads/transformer.h"
#include "sim_test_util.h"

namespace trirace::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Workload Preset(const std::string& name, int iterations = 6) {
  hybrid::Config c;
  std::string error;
  EXPECT_TRUE(hybrid::ApplyPreset(name, &c, &error)) << error;
  c.iterations = iterations;
  c.warmup = 1;
  absl::StatusOr<Workload> w = HybridExampleWorkload(c);
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

Cluster Bed() {
  absl::StatusOr<Cluster> c = MakeCluster("testbed", {});
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(SimulationTest, TheSameInputsGiveTheSameFiguresBitForBit) {
  const Cluster bed = Bed();
  const Workload w = Preset("contention");
  for (Mode m : AllModes()) {
    const ModeResult a = testing::RunMode(bed, w, m), b = testing::RunMode(bed, w, m);
    SCOPED_TRACE(ModeName(m));
    ASSERT_EQ(a.iteration_ms.size(), b.iteration_ms.size());
    for (size_t i = 0; i < a.iteration_ms.size(); ++i) EXPECT_EQ(a.iteration_ms[i], b.iteration_ms[i]);
    EXPECT_EQ(a.events, b.events);
    EXPECT_EQ(a.release_reasons, b.release_reasons);
  }
}

class BoundsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BoundsTest, TheBoundIsBelowTheIdealAndTheIdealBelowEveryMode) {
  const Cluster bed = Bed();
  absl::StatusOr<Comparison> c = CompareModes(bed, Preset(GetParam()), AllModes());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_LE(c->bound_ms, c->ideal.iteration_ms_median + 1e-9);
  EXPECT_GT(c->bound_ms, 0);
  for (const ModeResult& r : c->modes) {
    SCOPED_TRACE(ModeName(r.mode));
    // The ideal preempts for free; a real mode can only come near it.
    EXPECT_GE(r.iteration_ms_median, c->ideal.iteration_ms_median * (1 - 1e-9));
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, BoundsTest, ::testing::Values("contention", "megatron", "sparse", "no-contention"));

TEST(SimulationTest, GatedModesRunTheRealEngineWithTheRealPolicies) {
  const Cluster bed = Bed();
  const Workload w = Preset("contention");
  for (Mode m : {Mode::kFifo, Mode::kPriority, Mode::kGate, Mode::kTrirace}) {
    SCOPED_TRACE(ModeName(m));
    const ModeResult r = testing::RunMode(bed, w, m);
    // Every op went through an engine; its policy is the one the shim's
    // factory makes for the mode.
    EXPECT_GT(r.tasks, 0u);
    EXPECT_EQ(r.policy, std::string(sched::MakePolicy(SettingsOf(m).policy)->name()));
    EXPECT_FALSE(r.release_reasons.empty());
  }
  // Ungated modes have no engine.
  EXPECT_EQ(testing::RunMode(bed, w, Mode::kWire).tasks, 0u);
}

TEST(SimulationTest, TheHoldBoundActsInSimulatedTime) {
  // priority's window holds most chunks of this preset to the bound: every
  // such gate opened exactly one bound after its call, in simulated time.
  const Cluster bed = Bed();
  const Workload w = Preset("contention");
  const ModeResult r = testing::RunMode(bed, w, Mode::kPriority);
  EXPECT_GT(r.held_to_bound, 0u);
  ASSERT_FALSE(r.hold_waits_ns.empty());
  for (int64_t wait : r.hold_waits_ns) {
    EXPECT_GE(wait, 5'000'000);                  // TRIRACE_MAX_HOLD_US
    EXPECT_LE(wait, int64_t(0.1 * 400e6) + 1);   // TRIRACE_MAX_HOLD_FRACTION of a period
  }
}

TEST(SimulationTest, TheTunerActsInSimulatedTime) {
  // trirace tunes its links' window and credit on this preset at 1 Gbit/s;
  // a link changes at most once per TRIRACE_TUNE_INTERVAL_US (100 ms) of
  // simulated time, on each of the 8 ranks' engines (2 links each).
  ClusterOptions o;
  o.gbps = 1;
  absl::StatusOr<Cluster> bed = MakeCluster("testbed", o);
  ASSERT_TRUE(bed.ok());
  const ModeResult r = testing::RunMode(*bed, Preset("sparse", 10), Mode::kTrirace);
  EXPECT_GT(r.tuning_changes, 0u);
  EXPECT_LE(double(r.tuning_changes), 8 * 2 * (r.run_ms / 100 + 1));
}

// sim/ must run the scheduler's policies, never one of its own: no class
// there derives from sched::Policy or decides releases.
TEST(SimulationTest, TheSimulatorHoldsNoPolicyOfItsOwn) {
  std::vector<std::string> files;
  std::vector<std::string> dirs = {SIM_SOURCE_DIR};
  while (!dirs.empty()) {
    const std::string d = dirs.back();
    dirs.pop_back();
    DIR* dir = opendir(d.c_str());
    ASSERT_NE(dir, nullptr) << d;
    while (dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = d + "/" + name;
      if (e->d_type == DT_DIR) dirs.push_back(path);
      if (name.size() > 3 && (name.ends_with(".cc") || name.ends_with(".h"))) files.push_back(path);
    }
    closedir(dir);
  }
  ASSERT_GT(files.size(), 10u);
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    SCOPED_TRACE(f);
    EXPECT_THAT(text.str(), Not(HasSubstr("public sched::Policy")));
    EXPECT_THAT(text.str(), Not(HasSubstr("public Policy")));
    EXPECT_THAT(text.str(), Not(HasSubstr("Decide(const")));
    EXPECT_THAT(text.str(), Not(HasSubstr("TriracePolicyConfig")));
  }
}

TEST(SimulationTest, AMismatchInAGatedModeEndsCleanly) {
  // The run fails while engines still hold gates: they are stopped before
  // the state their gate callbacks write to goes away.
  Workload w = Preset("contention", 3);
  for (NcclCall& c : w.ranks[1].calls) {
    if (c.func == NcclFunc::kAllReduce) {
      c.bytes += 4096;  // disagrees with its replica
      break;
    }
  }
  for (Mode m : {Mode::kGate, Mode::kTrirace}) {
    SimOptions o;
    o.mode = m;
    absl::StatusOr<ModeResult> r = Simulate(Bed(), w, o);
    ASSERT_FALSE(r.ok()) << ModeName(m);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("do not match"));
  }
}

TEST(SimulationTest, CallsThatNeverMatchAreReportedNotHung) {
  Workload w;
  w.name = "mismatch";
  w.comms.push_back({"world", {0, 1}, TrafficClass::kDense, false});
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(1);
    b.Stamp(0, 0);
    NcclCall c;
    c.comm = 0;
    c.bytes = r == 0 ? 1024 : 2048;  // rank 1 disagrees
    b.Comm(0, {c});
    b.Stamp(0, 1);
    w.ranks.push_back(b.Take());
  }
  absl::StatusOr<ModeResult> r = Simulate(testing::ExactBed(2, 1), w, SimOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("do not match"));
  // A receive nobody sends to: stuck, named.
  w.ranks[1] = {};
  ProgramBuilder b(1);
  NcclCall recv;
  recv.func = NcclFunc::kRecv;
  recv.peer = 0;
  recv.bytes = 8;
  b.Comm(0, {recv});
  w.ranks[1] = b.Take();
  ProgramBuilder a(1);
  w.ranks[0] = a.Take();
  r = Simulate(testing::ExactBed(2, 1), w, SimOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("rank 1 stream 0"));
}

}  // namespace
}  // namespace trirace::sim
