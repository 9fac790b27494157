// interpose/engine_factory: params to policy, occupancy reader and engine.
#include "interpose/engine_factory.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/env_guard.h"
#include "interpose/plugin_occupancy.h"
#include "support/fake_sysfs.h"

namespace trirace::interpose {
namespace {

using ::testing::HasSubstr;
using testing_support::FakeSysfs;

TEST(MakeOccupancyReaderTest, PicksTheBackendByName) {
  FakeSysfs sys;
  sys.Set("veth1", 0, 0);
  EnvGuard env;
  env.Set("TRIRACE_JOB_ID", "occ-test-" + std::to_string(getpid())).Apply();  // a job with no segment
  auto none = MakeOccupancyReader("none", {"veth1"}, sys.root());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  auto sysfs = MakeOccupancyReader("sysfs", {"veth1"}, sys.root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.status();
  EXPECT_EQ((*sysfs)->name(), "sysfs");
  auto fallback = MakeOccupancyReader("auto", {"veth1"}, sys.root());
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ((*fallback)->name(), "sysfs") << "no plugin segment: auto falls back to the counters";
  EXPECT_FALSE(MakeOccupancyReader("plugin", {"veth1"}, sys.root()).ok());
  auto bad = MakeOccupancyReader("psychic", {"veth1"}, sys.root());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'psychic' is not one of auto, plugin, sysfs, none"));
}

TEST(PluginOccupancyTest, NoSegmentIsAnErrorNotACrash) {
  EnvGuard env;
  env.Set("TRIRACE_JOB_ID", "no-such-job-" + std::to_string(getpid())).Apply();
  auto reader = OpenPluginOccupancyReader();
  EXPECT_FALSE(reader.ok());
}

TEST(MakePolicyTest, NamesEachPolicyAndRejectsOthers) {
  for (std::string_view name : {"fifo", "priority", "trirace", "adversarial"}) {
    absl::StatusOr<std::unique_ptr<sched::Policy>> policy = MakePolicy(name);
    ASSERT_TRUE(policy.ok()) << name << ": " << policy.status();
    EXPECT_EQ((*policy)->name(), name);
  }
  absl::StatusOr<std::unique_ptr<sched::Policy>> bad = MakePolicy("lottery");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'lottery' is not one of fifo, priority, trirace, adversarial"));
}

}  // namespace
}  // namespace trirace::interpose
