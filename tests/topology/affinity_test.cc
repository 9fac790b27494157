#include "topology/affinity.h"

#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "tests/topology/topo_builders.h"

namespace trirace::topo {
namespace {

using testing::AddGpu;
using testing::AddNic;
using testing::AddSwitch;
using testing::PcieServer;

TEST(AffinityTest, EachGpuUsesTheNicUnderItsSwitchAndRailsFollowBusIds) {
  Host h = PcieServer("node0");
  AssignNics(h);
  for (const Nic& n : h.nics) {
    EXPECT_EQ(n.name, "mlx5_" + std::to_string(n.rail)) << "rails in bus-id order, whatever the listing order";
  }
  ASSERT_EQ(h.gpus.size(), 8u);
  for (size_t g = 0; g < h.gpus.size(); ++g) {
    const Gpu& gpu = h.gpus[g];
    ASSERT_GE(gpu.nic, 0);
    EXPECT_EQ(h.nics[gpu.nic].rail, static_cast<int>(g / 2)) << "GPU " << g;
    EXPECT_EQ(PciPathType(h, gpu.pci_node, gpu.numa, h.nics[gpu.nic].pci_node, h.nics[gpu.nic].numa),
              PathType::kPix);
  }
}

TEST(AffinityTest, EquidistantNicsAreSharedEvenlyAndDeterministically) {
  Host h;
  for (int n = 0; n < 4; ++n) AddNic(h, "eth" + std::to_string(n), 0x80 + n, 0, -1);
  for (int g = 0; g < 8; ++g) AddGpu(h, 0x10 + g, 0, -1);
  AssignNics(h);
  int users[4] = {0, 0, 0, 0};
  for (size_t g = 0; g < h.gpus.size(); ++g) {
    ASSERT_GE(h.gpus[g].nic, 0);
    EXPECT_EQ(h.nics[h.gpus[g].nic].rail, static_cast<int>(g % 4)) << "fewest users, then the lowest rail";
    ++users[h.gpus[g].nic];
  }
  for (int u : users) EXPECT_EQ(u, 2);
  Host again = h;
  AssignNics(again);
  for (size_t g = 0; g < h.gpus.size(); ++g) EXPECT_EQ(again.gpus[g].nic, h.gpus[g].nic);
}

TEST(AffinityTest, AGpuWithoutANicOnItsSocketCrossesToTheOtherSocket) {
  Host h;
  h.numa_nodes = 2;
  const int s0 = AddSwitch(h, 0x10, 0);
  const int s1 = AddSwitch(h, 0x90, 1);
  AddNic(h, "mlx5_0", 0x11, 0, s0);
  const int far = AddGpu(h, 0x91, 1, s1);
  const int near = AddGpu(h, 0x12, 0, s0);
  AssignNics(h);
  EXPECT_EQ(h.gpus[far].nic, 0);
  EXPECT_EQ(h.gpus[near].nic, 0);
  EXPECT_EQ(PciPathType(h, h.gpus[far].pci_node, 1, h.nics[0].pci_node, 0), PathType::kSys);
}

TEST(AffinityTest, AHostWithoutNicsLeavesGpusWithout) {
  Host h;
  AddGpu(h, 0x10, 0, -1);
  AssignNics(h);
  EXPECT_EQ(h.gpus[0].nic, -1);
}

// Path types between two endpoints: same switch, nested switches, the same
// CPU through its root ports, across CPUs.
TEST(PathTypeTest, PixPxbPhbSys) {
  Host h;
  const int top = AddSwitch(h, 0x10, 0);
  const int leaf = AddSwitch(h, 0x11, 0, top);
  const int other_root = AddSwitch(h, 0x20, 0);
  const int remote_root = AddSwitch(h, 0x90, 1);
  AddGpu(h, 0x12, 0, leaf);          // pci 4
  AddNic(h, "a", 0x13, 0, leaf);     // pci 5: same switch
  AddNic(h, "b", 0x14, 0, top);      // pci 6: one switch up
  AddNic(h, "c", 0x21, 0, other_root);
  AddNic(h, "d", 0x91, 1, remote_root);
  const int gpu = h.gpus[0].pci_node;
  EXPECT_EQ(PciPathType(h, gpu, 0, gpu, 0), PathType::kLoc);
  EXPECT_EQ(PciPathType(h, gpu, 0, h.nics[0].pci_node, 0), PathType::kPix);
  EXPECT_EQ(PciPathType(h, gpu, 0, h.nics[1].pci_node, 0), PathType::kPxb);
  EXPECT_EQ(PciPathType(h, gpu, 0, h.nics[2].pci_node, 0), PathType::kPhb);
  EXPECT_EQ(PciPathType(h, gpu, 0, h.nics[3].pci_node, 1), PathType::kSys);
  EXPECT_EQ(PciPathType(h, -1, 0, -1, 0), PathType::kPhb) << "endpoints outside the tree: by NUMA node";
  EXPECT_EQ(PciPathType(h, -1, 0, -1, 1), PathType::kSys);
}

class NicListTest : public ::testing::TestWithParam<std::tuple<const char*, const char*, bool>> {};

TEST_P(NicListTest, MatchesNcclListRules) {
  const auto [name, list, allowed] = GetParam();
  EXPECT_EQ(NicAllowed(name, list), allowed) << name << " in \"" << list << "\"";
}

INSTANTIATE_TEST_SUITE_P(
    Rules, NicListTest,
    ::testing::Values(std::make_tuple("eth0", "", true), std::make_tuple("eth0", "eth", true),
                      std::make_tuple("ib0", "eth,enp", false), std::make_tuple("eth0", "^eth", false),
                      std::make_tuple("ib0", "^eth,lo", true), std::make_tuple("mlx5_1", "=mlx5_1", true),
                      std::make_tuple("mlx5_10", "=mlx5_1", false), std::make_tuple("mlx5_10", "mlx5_1", true),
                      std::make_tuple("mlx5_2", "mlx5_0:1,mlx5_2:1", true),
                      std::make_tuple("mlx5_3", "mlx5_0:1,mlx5_2:1", false)));

TEST(AffinityTest, FilteringNicsKeepsTheRestConsistent) {
  Host h = PcieServer("node0");
  FilterNics(h, "^mlx5_0,mlx5_2");
  ASSERT_EQ(h.nics.size(), 2u);
  AssignNics(h);
  for (const Nic& n : h.nics) EXPECT_TRUE(n.name == "mlx5_1" || n.name == "mlx5_3") << n.name;
  EXPECT_EQ(h.nics[h.gpus[0].nic].name, "mlx5_1") << "socket 0's remaining NIC (PHB)";
  EXPECT_EQ(h.nics[h.gpus[7].nic].name, "mlx5_3");
}

}  // namespace
}  // namespace trirace::topo
