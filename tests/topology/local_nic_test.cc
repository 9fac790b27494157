// The host key and NIC of this process from the parameters and sysfs.
#include "topology/local_nic.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/env_guard.h"
#include "support/subprocess.h"

namespace trirace::topo {
namespace {

TEST(LocalNicTest, FromParamsThenSysfsThenTheDefault) {
  const std::string dir = testing_support::MakeTempDir("trirace-localnic-");
  std::filesystem::create_directories(dir + "/veth7");
  std::ofstream(dir + "/veth7/speed") << "25000\n";
  EnvGuard env;
  env.Set("TRIRACE_HOST_ID", "rack1-node3").Set("TRIRACE_NIC", "veth7").Unset("TRIRACE_NIC_GBPS").Apply();
  LocalNic n = LocalNicFromParams(dir);
  EXPECT_EQ(n.host_key, "rack1-node3");
  EXPECT_EQ(n.interface, "veth7");
  EXPECT_DOUBLE_EQ(n.gbps, 25);
  EXPECT_EQ(n.rate_source, Source::kSysfs);
  env.Set("TRIRACE_NIC_GBPS", "200").Apply();
  n = LocalNicFromParams(dir);
  EXPECT_DOUBLE_EQ(n.gbps, 200);
  EXPECT_EQ(n.rate_source, Source::kParam);
  env.Unset("TRIRACE_NIC_GBPS").Set("TRIRACE_NIC", "veth8").Apply();  // no speed file
  n = LocalNicFromParams(dir);
  EXPECT_DOUBLE_EQ(n.gbps, 100);
  EXPECT_EQ(n.rate_source, Source::kDefault);
  env.Unset("TRIRACE_HOST_ID").Apply();
  EXPECT_FALSE(LocalHostKey().empty());
  std::filesystem::remove_all(dir);
}

TEST(LocalNicTest, DefaultRouteInterfaceReadsTheRouteTable) {
  const std::string dir = testing_support::MakeTempDir("trirace-localnic-");
  std::ofstream(dir + "/route")
      << "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      << "eth1\t0010A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      << "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
  EXPECT_EQ(DefaultRouteInterface(dir + "/route"), "eth0");
  EXPECT_EQ(DefaultRouteInterface(dir + "/missing"), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trirace::topo
