// Occupancy monitors: Ethernet statistics and InfiniBand port counters
// over fake sysfs trees, and the real loopback counters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/fake_sysfs.h"
#include "topology/monitors/ib_counters.h"
#include "topology/monitors/net_stats.h"

namespace trirace::topo {
namespace {

using ::testing::HasSubstr;
using testing_support::FakeSysfs;

TEST(NetStatsTest, ReadsCountersOfEachInterface) {
  FakeSysfs sys;
  sys.Set("eth0", 100, 200);
  sys.Set("eth1", 5, 6);
  ManualClock clock(7);
  auto reader = OpenNetStatsReader({"eth0", "eth1"}, sys.root(), &clock);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->name(), "sysfs");
  auto snap = (*reader)->Read();
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(snap->time_ns, 7);
  ASSERT_EQ(snap->devices.size(), 2u);
  EXPECT_EQ(snap->devices[0].device, "eth0");
  EXPECT_EQ(snap->devices[0].tx_bytes, 100u);
  EXPECT_EQ(snap->devices[0].rx_bytes, 200u);
  EXPECT_FALSE(snap->devices[0].has_ours);
  sys.Set("eth0", 1100, 250);  // rewritten in place: the open file sees it
  snap = (*reader)->Read();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->devices[0].tx_bytes, 1100u);
}

TEST(NetStatsTest, ErrorsNameTheInterfaceAndFile) {
  FakeSysfs sys;
  sys.Set("eth0", 1, 1);
  auto missing = OpenNetStatsReader({"eth0", "wlan9"}, sys.root());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("wlan9/statistics/tx_bytes"));
  EXPECT_EQ(OpenNetStatsReader({}, sys.root()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(OpenNetStatsReader({"../etc"}, sys.root()).status().message(), HasSubstr("'../etc'"));

  auto reader = OpenNetStatsReader({"eth0"}, sys.root());
  ASSERT_TRUE(reader.ok());
  sys.WriteRaw("eth0/statistics/rx_bytes", "garbage\n");
  auto snap = (*reader)->Read();
  ASSERT_FALSE(snap.ok());
  EXPECT_THAT(snap.status().message(), HasSubstr("not a byte counter"));
}

TEST(NetStatsTest, ReadsTheRealLoopbackCounters) {
  if (!std::filesystem::exists("/sys/class/net/lo/statistics/tx_bytes")) GTEST_SKIP() << "no /sys/class/net/lo";
  auto reader = OpenNetStatsReader({"lo"});
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->Read().ok());
}

// Port counters of mlx5_0 port 1 and mlx5_1 port 2 under a fake
// class/infiniband, in 4-byte units.
class IbCountersTest : public ::testing::Test {
 protected:
  void Set(const std::string& dev, int port, uint64_t xmit_words, uint64_t rcv_words) {
    const std::string dir = dev + "/ports/" + std::to_string(port) + "/counters";
    std::filesystem::create_directories(sys_.root() + "/" + dir);
    const std::pair<const char*, uint64_t> files[] = {{"port_xmit_data", xmit_words}, {"port_rcv_data", rcv_words}};
    for (const auto& [file, v] : files) {
      const std::string path = dir + "/" + file;
      if (!std::filesystem::exists(sys_.root() + "/" + path)) std::ofstream(sys_.root() + "/" + path) << "0\n";
      sys_.WriteRaw(path, std::to_string(v) + "\n");
    }
  }
  FakeSysfs sys_;
};

TEST_F(IbCountersTest, CountsFourBytesPerUnitAndNamesEachPort) {
  Set("mlx5_0", 1, 1000, 10);
  Set("mlx5_1", 2, 7, 8);
  ManualClock clock(3);
  auto reader = OpenIbCountersReader({{"mlx5_0", 1}, {"mlx5_1", 2}, {"mlx5_0", 1, "ib0"}}, sys_.root(), &clock);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->name(), "infiniband");
  auto snap = (*reader)->Read();
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(snap->time_ns, 3);
  ASSERT_EQ(snap->devices.size(), 3u);
  EXPECT_EQ(snap->devices[0].device, "mlx5_0");
  EXPECT_EQ(snap->devices[0].tx_bytes, 4000u);
  EXPECT_EQ(snap->devices[0].rx_bytes, 40u);
  EXPECT_EQ(snap->devices[1].device, "mlx5_1:2");
  EXPECT_EQ(snap->devices[1].tx_bytes, 28u);
  EXPECT_EQ(snap->devices[2].device, "ib0") << "a port measured for a netdev carries its name";
  EXPECT_FALSE(snap->devices[0].has_ours);
  Set("mlx5_0", 1, 2000, 10);  // rewritten in place: the open file sees it
  snap = (*reader)->Read();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->devices[0].tx_bytes, 8000u);
}

TEST_F(IbCountersTest, ErrorsNameTheDevicePortAndFile) {
  Set("mlx5_0", 1, 1, 1);
  auto missing = OpenIbCountersReader({{"mlx5_0", 2}}, sys_.root());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("mlx5_0/ports/2/counters/port_xmit_data"));
  EXPECT_EQ(OpenIbCountersReader({}, sys_.root()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(OpenIbCountersReader({{"../x", 1}}, sys_.root()).status().message(), HasSubstr("not an RDMA port"));
  EXPECT_FALSE(OpenIbCountersReader({{"mlx5_0", 0}}, sys_.root()).ok());
  auto reader = OpenIbCountersReader({{"mlx5_0", 1}}, sys_.root());
  ASSERT_TRUE(reader.ok());
  sys_.WriteRaw("mlx5_0/ports/1/counters/port_rcv_data", "n/a\n");
  EXPECT_THAT((*reader)->Read().status().message(), HasSubstr("not a byte counter"));
}

}  // namespace
}  // namespace trirace::topo
