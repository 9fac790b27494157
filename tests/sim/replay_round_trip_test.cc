// The round trip: a simulated run's own traces (`trirace sim --trace
// DIR/trace.%r.json`) replay by dependencies (sim/workloads/replay_trace.h)
// and reproduce the run they came from, in every mode, with every gap
// explained. The one check of the replay that needs no bed and has no
// noise (issue: faithful replay).
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "config.h"
#include "sim/run/compare.h"
#include "sim/run/trace_out.h"
#include "sim/workloads/hybrid_example.h"
#include "sim/workloads/jobs.h"
#include "sim/workloads/models.h"
#include "sim/workloads/replay.h"
#include "sim/workloads/transformer.h"
#include "sim_test_util.h"
#include "support/subprocess.h"

namespace trirace::sim {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;  // a hybrid_parallel preset, rails-shared or "generated"
  std::string job;   // rails-shared: the job whose figures are compared
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name << (c.job.empty() ? "" : "/" + c.job); }

const std::vector<Mode> kModes = {Mode::kOff, Mode::kWire, Mode::kGate, Mode::kTrirace};

// The traced run's workload and its cluster (the test bed at 300 Mbit/s, its
// calibrated latency and burst, exact compute).
struct TracedRun {
  Cluster cluster;
  Workload workload;
};

TracedRun Generate(const std::string& name) {
  ClusterOptions o;
  o.gbps = 0.3;
  if (name == "rails-shared") o.nics = 2;
  if (name == "generated") o.hosts = 8;
  absl::StatusOr<Cluster> c = MakeCluster("testbed", o);
  EXPECT_TRUE(c.ok()) << c.status();
  c->compute_scale = 1;
  absl::StatusOr<Workload> w = absl::UnknownError("no workload");
  if (name == "rails-shared") {
    w = RailsPreset(name, {}, &*c);
  } else if (name == "generated") {
    TrainingSpec t;
    t.model = *BuiltinModel("bert-large");
    t.pp = 4;
    t.dp = 4;
    t.schedule = PipelineSchedule::k1F1B;
    t.microbatches = 8;
    t.iterations = 4;
    t.warmup = 1;
    t.gpu = DefaultGpuProfile("testbed");
    w = TransformerWorkload(t, *c);
  } else {
    hybrid::Config hc;
    std::string error;
    EXPECT_TRUE(hybrid::ParseArgs({"--preset", name}, &hc, &error)) << error;
    w = HybridExampleWorkload(hc);
  }
  EXPECT_TRUE(w.ok()) << w.status();
  return {*c, w.ok() ? *w : Workload{}};
}

double IterationMs(const ModeResult& r, const std::string& job) {
  for (const JobResult& j : r.jobs) {
    if (j.name == job) return j.iteration_ms_median;
  }
  EXPECT_TRUE(job.empty()) << "no job " << job;
  return r.iteration_ms_median;
}

class ReplayRoundTripTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { dir_ = testing_support::MakeTempDir("trirace-round-trip-"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(ReplayRoundTripTest, TheReplayOfAnOffRunReproducesItInEveryMode) {
  const Case& tc = GetParam();
  TracedRun run = Generate(tc.name);
  ASSERT_FALSE(run.workload.ranks.empty());
  TraceOut trace;
  absl::StatusOr<Comparison> generated = CompareModes(run.cluster, run.workload, kModes, {}, &trace, Mode::kOff);
  ASSERT_TRUE(generated.ok()) << generated.status();
  ASSERT_TRUE(trace.Write((dir_ / "trace.%r.json").string(), run.workload).ok());

  ReplayStats stats;
  absl::StatusOr<Workload> replayed = ReplayWorkload(dir_.string(), &stats);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_TRUE(stats.by_dependencies);
  EXPECT_GT(stats.stream_waits, 0);
  // Every gap of a simulated run has a cause the times show.
  EXPECT_EQ(stats.unexplained, 0);
  EXPECT_EQ(stats.host_spent, 0);
  EXPECT_EQ(replayed->iterations, run.workload.iterations);
  EXPECT_EQ(replayed->warmup, run.workload.warmup);
  EXPECT_EQ(replayed->job_names.size(), run.workload.job_names.size());

  // rails-shared puts both jobs on rail 0: one NIC per host is the same network.
  Cluster on = run.cluster;
  if (tc.name == "rails-shared") {
    ClusterOptions o;
    o.gbps = 0.3;
    on = *MakeCluster("testbed", o);
    on.compute_scale = 1;
  }
  absl::StatusOr<Comparison> again = CompareModes(on, *replayed, kModes);
  ASSERT_TRUE(again.ok()) << again.status();

  const double off = IterationMs(*generated->Find(Mode::kOff), tc.job);
  const double off_again = IterationMs(*again->Find(Mode::kOff), tc.job);
  EXPECT_NEAR(off_again, off, 0.01 * off) << "off within 1%";
  for (Mode m : kModes) {
    const double speedup = off / IterationMs(*generated->Find(m), tc.job);
    const double speedup_again = off_again / IterationMs(*again->Find(m), tc.job);
    EXPECT_NEAR(speedup_again, speedup, 0.01) << ModeName(m) << ": the speed-up within 1 point";
  }
}

INSTANTIATE_TEST_SUITE_P(Workloads, ReplayRoundTripTest,
                         ::testing::Values(Case{"contention", ""}, Case{"megatron", ""}, Case{"sparse", ""},
                                           Case{"no-contention", ""}, Case{"rails-shared", "dp"},
                                           Case{"rails-shared", "pp"}, Case{"generated", ""}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name + (info.param.job.empty() ? "" : "_" + info.param.job);
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

// What a replay by dependencies rests on: the simulator's traces carry the
// peer of every send and receive, every call of a group, each comm's
// description, and stamps; without stream times (the shim's traces today)
// the replay falls back to call times and says so.
TEST_F(ReplayRoundTripTest, AShimTraceWithoutStreamTimesReplaysByCallTimes) {
  ReplayStats stats;
  absl::StatusOr<Workload> w = ReplayWorkload(SIM_TEST_DATA "/replay-tiny", &stats);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(stats.by_dependencies);
  EXPECT_EQ(stats.stream_waits, 0);
}

}  // namespace
}  // namespace trirace::sim
