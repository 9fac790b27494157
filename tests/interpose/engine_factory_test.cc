// interpose/gate/engine_factory: params to policy, occupancy reader and engine.
#include "interpose/gate/engine_factory.h"
#include "scheduler/policy_factory.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "common/env_guard.h"
#include "interpose/network/plugin_occupancy.h"
#include "support/fake_sysfs.h"

namespace trirace::interpose {
namespace {

using ::testing::HasSubstr;
using testing_support::FakeSysfs;

TEST(MakeOccupancyReaderTest, PicksTheBackendBySource) {
  FakeSysfs sys;  // its root plays /sys
  sys.Set("class/net/veth1", 0, 0);
  EnvGuard env;
  env.Set("TRIRACE_JOB_ID", "occ-test-" + std::to_string(getpid())).Apply();  // a job with no segment
  auto none = MakeOccupancyReader(OccupancySource::kNone, "veth1", sys.root());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  auto sysfs = MakeOccupancyReader(OccupancySource::kSysfs, "veth1", sys.root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.status();
  EXPECT_EQ((*sysfs)->name(), "sysfs");
  auto fallback = MakeOccupancyReader(OccupancySource::kAuto, "veth1", sys.root());
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ((*fallback)->name(), "sysfs") << "no plugin segment, no RDMA device: auto takes the counters";
  auto waiting = MakeOccupancyReader(OccupancySource::kPlugin, "veth1", sys.root());
  ASSERT_TRUE(waiting.ok()) << waiting.status() << ": the segment appears when NCCL loads the plugin";
  EXPECT_EQ((*waiting)->name(), "plugin (no segment yet)");
  EXPECT_TRUE(absl::IsUnavailable((*waiting)->Read().status())) << "a skipped sample until then";
  auto not_rdma = MakeOccupancyReader(OccupancySource::kInfiniband, "veth1", sys.root());
  ASSERT_FALSE(not_rdma.ok());
  EXPECT_THAT(not_rdma.status().message(), HasSubstr("veth1 is not an RDMA device"));
}

TEST(MakeOccupancyReaderTest, AnRdmaNicIsMeasuredByItsPortCounters) {
  FakeSysfs sys;
  sys.Set("class/net/ib0", 0, 0);
  for (const char* f : {"port_xmit_data", "port_rcv_data"}) {
    std::filesystem::create_directories(sys.root() + "/class/infiniband/mlx5_0/ports/1/counters");
    std::ofstream(sys.root() + "/class/infiniband/mlx5_0/ports/1/counters/" + f) << "25\n";
  }
  std::filesystem::create_directories(sys.root() + "/class/net/ib0/device/infiniband/mlx5_0");
  EnvGuard env;
  env.Set("TRIRACE_JOB_ID", "occ-test-" + std::to_string(getpid())).Apply();
  for (const char* nic : {"ib0", "mlx5_0"}) {
    auto reader = MakeOccupancyReader(OccupancySource::kAuto, nic, sys.root());
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->name(), "infiniband") << nic;
    auto snap = (*reader)->Read();
    ASSERT_TRUE(snap.ok()) << snap.status();
    ASSERT_EQ(snap->devices.size(), 1u);
    EXPECT_EQ(snap->devices[0].device, nic) << "named as the NIC whose links it measures";
    EXPECT_EQ(snap->devices[0].tx_bytes, 100u);
  }
  EXPECT_EQ(RdmaPortOf("veth9", sys.root()), std::nullopt);
}

TEST(PluginOccupancyTest, NoSegmentIsAnErrorNotACrash) {
  EnvGuard env;
  env.Set("TRIRACE_JOB_ID", "no-such-job-" + std::to_string(getpid())).Apply();
  auto reader = OpenPluginOccupancyReader();
  EXPECT_FALSE(reader.ok());
}

TEST(MakePolicyTest, EachKindMakesThePolicyOfItsName) {
  for (int i = 0; i < static_cast<int>(std::size(kPolicyKindTexts)); ++i) {
    std::unique_ptr<sched::Policy> policy = sched::MakePolicy(static_cast<PolicyKind>(i));
    ASSERT_NE(policy, nullptr);
    EXPECT_EQ(std::string(policy->name()), std::string(kPolicyKindTexts[i]));
  }
}

}  // namespace
}  // namespace trirace::interpose
