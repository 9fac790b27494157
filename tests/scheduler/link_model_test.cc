#include "scheduler/link_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/env_guard.h"
#include "support/subprocess.h"

namespace trirace::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

NicLinkModel::Options Opts(std::string host) {
  NicLinkModel::Options o;
  o.local_host = std::move(host);
  o.local_interface = "eth9";
  o.nic_bytes_per_s = 1e9;
  return o;
}

TEST(NicLinkModelTest, RanksOnOneHostCrossNoLink) {
  NicLinkModel model(Opts("a"));
  const std::vector<std::string> hosts = {"a", "a", "a"};
  EXPECT_THAT(model.LinksFor({hosts}), IsEmpty());
}

TEST(NicLinkModelTest, AnOpBetweenHostsCrossesBothNics) {
  NicLinkModel model(Opts("a"));
  const std::vector<std::string> peer = {"b"};
  const std::vector<LinkId> links = model.LinksFor({peer});
  ASSERT_THAT(links, ElementsAre(NicLinkModel::kLocalNic, 1u));
  const std::vector<LinkSpec> all = model.links();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "nic:a");
  EXPECT_EQ(all[0].interface, "eth9");
  EXPECT_EQ(all[1].name, "nic:b");
  EXPECT_EQ(all[1].capacity_bytes_per_s, 1e9);
}

TEST(NicLinkModelTest, ACollectiveCrossesTheNicOfEveryHostOnceAndIdsAreStable) {
  NicLinkModel model(Opts("a"));
  const std::vector<std::string> ring = {"a", "b", "c", "b", "a", "c"};
  EXPECT_THAT(model.LinksFor({ring}), ElementsAre(0u, 1u, 2u));
  const std::vector<std::string> other = {"c"};
  EXPECT_THAT(model.LinksFor({other}), ElementsAre(0u, 2u));
}

TEST(NicLinkModelTest, UnknownPeersAreAssumedOffHost) {
  NicLinkModel model(Opts("a"));
  EXPECT_THAT(model.LinksFor({}), ElementsAre(NicLinkModel::kLocalNic));
}

TEST(NicLinkModelTest, OptionsFromParams) {
  const std::string dir = testing_support::MakeTempDir("trirace-linkmodel-");
  std::filesystem::create_directories(dir + "/veth7");
  std::ofstream(dir + "/veth7/speed") << "25000\n";
  EnvGuard env;
  env.Set("TRIRACE_HOST_ID", "rack1-node3").Set("TRIRACE_NIC", "veth7").Unset("TRIRACE_NIC_GBPS").Apply();
  NicLinkModel::Options o = NicLinkModel::Options::FromParams(dir);
  EXPECT_EQ(o.local_host, "rack1-node3");
  EXPECT_EQ(o.local_interface, "veth7");
  EXPECT_DOUBLE_EQ(o.nic_bytes_per_s, 25000e6 / 8);
  env.Set("TRIRACE_NIC_GBPS", "200").Apply();
  EXPECT_DOUBLE_EQ(NicLinkModel::Options::FromParams(dir).nic_bytes_per_s, 25e9);
  env.Unset("TRIRACE_HOST_ID").Apply();
  EXPECT_FALSE(NicLinkModel::Options::FromParams(dir).local_host.empty());
  std::filesystem::remove_all(dir);
}

TEST(NicLinkModelTest, DefaultRouteInterfaceReadsTheRouteTable) {
  const std::string dir = testing_support::MakeTempDir("trirace-linkmodel-");
  std::ofstream(dir + "/route")
      << "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      << "eth1\t0010A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      << "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
  EXPECT_EQ(DefaultRouteInterface(dir + "/route"), "eth0");
  EXPECT_EQ(DefaultRouteInterface(dir + "/missing"), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trirace::sched
