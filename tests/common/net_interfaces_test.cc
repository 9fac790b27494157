// common/net_interfaces: the interface spec rules, the sysfs readers and the
// inventory of this machine's interfaces.
#include "common/net_interfaces.h"

#include <netinet/in.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/env_guard.h"
#include "support/fake_sysfs.h"

namespace trirace {
namespace {

TEST(InterfaceSpecTest, PrefixExcludeAndExact) {
  InterfaceSpec prefix = InterfaceSpec::Parse("eth,ib");
  EXPECT_TRUE(prefix.Matches("eth0"));
  EXPECT_TRUE(prefix.Matches("ib1"));
  EXPECT_FALSE(prefix.Matches("lo"));
  EXPECT_FALSE(prefix.NamesLoopback());

  InterfaceSpec exclude = InterfaceSpec::Parse("^docker,lo");
  EXPECT_FALSE(exclude.Matches("docker0"));
  EXPECT_FALSE(exclude.Matches("lo"));
  EXPECT_TRUE(exclude.Matches("eth0"));
  EXPECT_FALSE(exclude.NamesLoopback());

  InterfaceSpec exact = InterfaceSpec::Parse("=eth0");
  EXPECT_TRUE(exact.Matches("eth0"));
  EXPECT_FALSE(exact.Matches("eth01"));

  InterfaceSpec exact_exclude = InterfaceSpec::Parse("^=eth0");
  EXPECT_FALSE(exact_exclude.Matches("eth0"));
  EXPECT_TRUE(exact_exclude.Matches("eth01"));

  EXPECT_TRUE(InterfaceSpec::Parse("lo").NamesLoopback());
  EXPECT_TRUE(InterfaceSpec::Parse("=lo").NamesLoopback());
  EXPECT_TRUE(InterfaceSpec::Parse("").empty());
}

TEST(InterfaceSpecTest, TextComesFromTriraceThenNccl) {
  EnvGuard env;
  env.Set("TRIRACE_NET_IFNAME", "eth1").Set("NCCL_SOCKET_IFNAME", "ib").Apply();
  std::string source;
  EXPECT_EQ(InterfaceSpecText(&source), "eth1");
  EXPECT_EQ(source, "TRIRACE_NET_IFNAME");
  env.Unset("TRIRACE_NET_IFNAME").Apply();
  EXPECT_EQ(InterfaceSpecText(&source), "ib");
  EXPECT_EQ(source, "NCCL_SOCKET_IFNAME");
  env.Unset("NCCL_SOCKET_IFNAME").Apply();
  EXPECT_EQ(InterfaceSpecText(&source), "");
  EXPECT_EQ(source, "");
}

TEST(SysfsLinkSpeedTest, ReadsPositiveSpeedsOnly) {
  testing_support::FakeSysfs sys;
  sys.Set("eth0", 0, 0);
  sys.Set("veth0", 0, 0);
  std::ofstream(sys.root() + "/eth0/speed") << "25000\n";
  std::ofstream(sys.root() + "/veth0/speed") << "-1\n";
  EXPECT_EQ(SysfsLinkSpeedMbps("eth0", sys.root()), 25000);
  EXPECT_EQ(SysfsLinkSpeedMbps("veth0", sys.root()), std::nullopt) << "virtual interfaces report -1";
  EXPECT_EQ(SysfsLinkSpeedMbps("wlan9", sys.root()), std::nullopt) << "no such interface";
  EXPECT_EQ(SysfsDevicePath("eth0", sys.root()), "") << "no device link";
}

TEST(ListNetInterfacesTest, LoopbackWithItsAddressInNameOrder) {
  absl::StatusOr<std::vector<NetInterface>> all = ListNetInterfaces();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_FALSE(all->empty());
  for (size_t i = 1; i < all->size(); ++i) EXPECT_LT((*all)[i - 1].name, (*all)[i].name);
  bool saw_lo = false;
  for (const NetInterface& n : *all) {
    EXPECT_TRUE(n.addr.ss_family == AF_INET || n.addr.ss_family == AF_INET6) << n.name;
    EXPECT_GT(n.addr_len, 0u);
    if (n.name != "lo") continue;
    saw_lo = true;
    EXPECT_TRUE(n.loopback);
    EXPECT_TRUE(n.pci_path.empty());
    ASSERT_EQ(n.addr.ss_family, AF_INET) << "IPv4 is preferred";
    EXPECT_EQ(ntohl(reinterpret_cast<const sockaddr_in*>(&n.addr)->sin_addr.s_addr), INADDR_LOOPBACK);
    EXPECT_EQ(reinterpret_cast<const sockaddr_in*>(&n.addr)->sin_port, 0);
  }
  EXPECT_TRUE(saw_lo) << "no lo interface with an address";
}

}  // namespace
}  // namespace trirace
