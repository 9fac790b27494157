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

TEST(MakeOccupancyReaderTest, PicksTheBackendBySource) {
  FakeSysfs sys;
  sys.Set("veth1", 0, 0);
  EnvGuard env;
  env.Set("TRIRACE_JOB_ID", "occ-test-" + std::to_string(getpid())).Apply();  // a job with no segment
  auto none = MakeOccupancyReader(OccupancySource::kNone, {"veth1"}, sys.root());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  auto sysfs = MakeOccupancyReader(OccupancySource::kSysfs, {"veth1"}, sys.root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.status();
  EXPECT_EQ((*sysfs)->name(), "sysfs");
  auto fallback = MakeOccupancyReader(OccupancySource::kAuto, {"veth1"}, sys.root());
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ((*fallback)->name(), "sysfs") << "no plugin segment: auto falls back to the counters";
  EXPECT_FALSE(MakeOccupancyReader(OccupancySource::kPlugin, {"veth1"}, sys.root()).ok());
}

TEST(PluginOccupancyTest, NoSegmentIsAnErrorNotACrash) {
  EnvGuard env;
  env.Set("TRIRACE_JOB_ID", "no-such-job-" + std::to_string(getpid())).Apply();
  auto reader = OpenPluginOccupancyReader();
  EXPECT_FALSE(reader.ok());
}

TEST(MakePolicyTest, EachKindMakesThePolicyOfItsName) {
  for (int i = 0; i < static_cast<int>(std::size(kPolicyKindTexts)); ++i) {
    std::unique_ptr<sched::Policy> policy = MakePolicy(static_cast<PolicyKind>(i));
    ASSERT_NE(policy, nullptr);
    EXPECT_EQ(std::string(policy->name()), std::string(kPolicyKindTexts[i]));
  }
}

}  // namespace
}  // namespace trirace::interpose
