// Several jobs on one cluster (sim/workloads/jobs.h): each keeps its own
// comms and ranks; on separate rails they do not slow each other, on one
// they do.
#include "sim/workloads/jobs.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/run/compare.h"
#include "sim_test_util.h"

namespace trirace::sim {
namespace {

Cluster TwoRailBed() {
  ClusterOptions o;
  o.nics = 2;
  absl::StatusOr<Cluster> c = MakeCluster("testbed", o);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

double JobMs(const ModeResult& r, const std::string& job) {
  for (const JobResult& j : r.jobs) {
    if (j.name == job) return j.iteration_ms_median;
  }
  ADD_FAILURE() << "no job " << job;
  return 0;
}

TEST(JobsTest, OnSeparateRailsEachJobRunsAsItWouldAlone) {
  Cluster split = TwoRailBed();
  absl::StatusOr<Workload> w = RailsPreset("rails-split", {"--iterations", "6"}, &split);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->job_names, (std::vector<std::string>{"dp", "pp"}));
  const ModeResult both = testing::RunMode(split, *w, Mode::kOff);
  for (int j = 0; j < 2; ++j) {
    const ModeResult alone = testing::RunMode(split, OnlyJob(*w, j), Mode::kOff);
    EXPECT_NEAR(JobMs(both, w->job_names[size_t(j)]), alone.iteration_ms_median, 1e-9) << w->job_names[size_t(j)];
  }
}

TEST(JobsTest, OnOneRailTheJobsShareItAndClassPriorityPicksThePipeline) {
  Cluster split = TwoRailBed(), shared = TwoRailBed();
  absl::StatusOr<Workload> a = RailsPreset("rails-split", {"--iterations", "6"}, &split);
  absl::StatusOr<Workload> b = RailsPreset("rails-shared", {"--iterations", "6"}, &shared);
  ASSERT_TRUE(a.ok() && b.ok());
  const ModeResult apart = testing::RunMode(split, *a, Mode::kOff);
  const ModeResult together = testing::RunMode(shared, *b, Mode::kOff);
  const ModeResult by_class = testing::RunMode(shared, *b, Mode::kWire);
  EXPECT_GT(JobMs(together, "dp"), 1.2 * JobMs(apart, "dp"));
  EXPECT_GT(JobMs(together, "pp"), 1.2 * JobMs(apart, "pp"));
  // P2P ahead on the wire: the pipeline job nearly as fast as alone, the
  // data-parallel job slower than sharing alike.
  EXPECT_LT(JobMs(by_class, "pp"), 1.05 * JobMs(apart, "pp"));
  EXPECT_GT(JobMs(by_class, "dp"), JobMs(together, "dp"));
}

TEST(JobsTest, BadPlacementsAreNamed) {
  Cluster bed = testing::ExactBed(2, 1);
  Workload one;
  one.comms.push_back({"c", {0}, TrafficClass::kDense, false});
  one.ranks.resize(1);
  absl::StatusOr<Workload> w = CombineJobs({{"a", one, {0}, {}}, {"b", one, {0}, {}}}, &bed);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), ::testing::HasSubstr("already taken"));
  w = CombineJobs({{"a", one, {5}, {}}}, &bed);
  EXPECT_FALSE(w.ok());
  Cluster one_nic = testing::ExactBed(4, 2);
  w = RailsPreset("rails-split", {}, &one_nic);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), ::testing::HasSubstr("--nics 2"));
}

}  // namespace
}  // namespace trirace::sim
