// The simulator as a whole (sim/run/simulation.h): the same inputs give the
// same figures bit for bit; no mode beats the ideal and nothing the bound;
// the gated modes run the real engine and policies, in simulated time.
#include "sim/run/simulation.h"

#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/env_guard.h"
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

Cluster BedWithQos(Qos qos) {
  ClusterOptions o;
  o.qos = qos;
  absl::StatusOr<Cluster> c = MakeCluster("testbed", o);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(SimulationQosTest, MarksThatNoQueueHonoursChangeNothingAndTheIdealIgnoresTheQos) {
  const Workload w = Preset("contention");
  EXPECT_EQ(Bed().qos, Qos::kFabric) << "the bed's default, as run_e2e.sh brings it up (--prio)";
  const Cluster none = BedWithQos(Qos::kNone), host = BedWithQos(Qos::kHost), fabric = BedWithQos(Qos::kFabric);
  const ModeResult off = testing::RunMode(none, w, Mode::kOff);
  const ModeResult wire_none = testing::RunMode(none, w, Mode::kWire);
  EXPECT_EQ(wire_none.iteration_ms, off.iteration_ms) << "wire with no class queue is off";
  const ModeResult wire_host = testing::RunMode(host, w, Mode::kWire);
  const ModeResult wire_fabric = testing::RunMode(fabric, w, Mode::kWire);
  EXPECT_LT(wire_fabric.iteration_ms_median, off.iteration_ms_median);
  EXPECT_NE(wire_host.iteration_ms, off.iteration_ms) << "the egress queues act";
  EXPECT_NE(wire_host.iteration_ms, wire_fabric.iteration_ms) << "the downlinks' queues act too";
  // The ideal is the target in every setting: strict priority everywhere.
  const ModeResult ideal_none = testing::RunMode(none, w, Mode::kIdeal);
  EXPECT_EQ(ideal_none.iteration_ms, testing::RunMode(fabric, w, Mode::kIdeal).iteration_ms);
  EXPECT_EQ(ideal_none.iteration_ms, testing::RunMode(host, w, Mode::kIdeal).iteration_ms);
  // The same inputs give the same figures with mixed queues as well.
  EXPECT_EQ(wire_host.iteration_ms, testing::RunMode(host, w, Mode::kWire).iteration_ms);
}

TEST(SimulationQosTest, WhereNoQueueHonoursTheMarksTheTriracePolicyGatesAloneUnlessForced) {
  // TRIRACE_NET_CLASS_PRIORITY=auto, as the shim decides from the qdiscs:
  // no marks where nothing honours them, so trirace is gate.
  const Workload w = Preset("contention");
  const Cluster none = BedWithQos(Qos::kNone);
  const ModeResult gate = testing::RunMode(none, w, Mode::kGate);
  EXPECT_EQ(testing::RunMode(none, w, Mode::kTrirace).iteration_ms, gate.iteration_ms);
  // Forced on (an administrator vouching for a QoS the hosts cannot
  // see), the policy counts on marks that nothing honours here.
  EnvGuard env;
  env.Set("TRIRACE_NET_CLASS_PRIORITY", "on").Apply();
  EXPECT_NE(testing::RunMode(none, w, Mode::kTrirace).iteration_ms, gate.iteration_ms);
}

TEST(SimulationQosTest, EachBuiltInClusterStatesItsQos) {
  for (const auto& [name, qos] : {std::pair<std::string, Qos>{"dgx-h100", Qos::kNone},
                                  {"pcie-2nic", Qos::kNone}, {"testbed", Qos::kFabric}}) {
    absl::StatusOr<Cluster> c = MakeCluster(name, {});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->qos, qos) << name;
    ClusterOptions o;
    o.qos = Qos::kHost;
    EXPECT_EQ(MakeCluster(name, o)->qos, Qos::kHost) << name;
  }
  for (Qos q : {Qos::kNone, Qos::kHost, Qos::kFabric}) EXPECT_EQ(QosFromName(QosName(q)), q);
  EXPECT_EQ(QosFromName("strict"), std::nullopt);
}

TEST(SimulationTest, ATokenBucketsBurstCountsInTheBoundAndTheLinksShare) {
  // `tiny` is short enough that the bed's bursts at the 10 Gbit/s line
  // carry a share of its bytes: the bound and the link use allow for them.
  ClusterOptions o;
  o.hosts = 2;
  absl::StatusOr<Cluster> bed = MakeCluster("testbed", o);
  ASSERT_TRUE(bed.ok()) << bed.status();
  ASSERT_GT(bed->burst_bytes, 0);
  absl::StatusOr<Comparison> c = CompareModes(*bed, Preset("tiny", 4), {Mode::kOff, Mode::kTrirace});
  ASSERT_TRUE(c.ok()) << c.status();
  for (const ModeResult& r : c->modes) {
    SCOPED_TRACE(ModeName(r.mode));
    EXPECT_LE(c->bound_ms, r.iteration_ms_median);
    for (const LinkUse& u : r.busiest) EXPECT_LE(u.utilisation, 1.0 + 1e-9) << u.name;
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
    EXPECT_EQ(r.policy, std::string(sched::MakePolicy(SettingsOf(m, bed.qos).policy)->name()));
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
