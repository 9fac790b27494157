// The test topologies end to end: an NCCL topology XML -> the model ->
// GPU <-> NIC affinity, rails and the links ops cross.
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "topology/affinity.h"
#include "topology/discovery/nccl_xml.h"
#include "topology/paths.h"

namespace trirace::topo {
namespace {

Host Load(const std::string& file) {
  std::ifstream in(std::string(TRIRACE_TOPO_TEST_DATA) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<Host> host = ParseNcclTopoXml(text.str(), file);
  EXPECT_TRUE(host.ok()) << host.status();
  Host h = host.ok() ? *std::move(host) : Host{};
  AssignNics(h);
  return h;
}

// The switch a PCI endpoint hangs under (its parent's bus id).
std::string SwitchOf(const Host& h, int pci_node) {
  const int parent = h.pci.at(pci_node).parent;
  return parent < 0 ? "" : h.pci[parent].busid;
}

TEST(TopologyFilesTest, PcieServerEachGpuUsesTheNicOnItsSwitch) {
  const Host h = Load("pcie_8gpu_4nic.xml");
  ASSERT_EQ(h.gpus.size(), 8u);
  ASSERT_EQ(h.nics.size(), 4u);
  EXPECT_EQ(h.numa_nodes, 2);
  for (const Nic& n : h.nics) {
    EXPECT_EQ(n.name, "mlx5_" + std::to_string(n.rail)) << "rails in bus-id order";
    EXPECT_EQ(n.gbps, 200);
    EXPECT_EQ(n.link_layer, LinkLayer::kInfiniBand);
  }
  std::vector<int> users(h.nics.size(), 0);
  for (const Gpu& g : h.gpus) {
    ASSERT_GE(g.nic, 0) << g.pci;
    const Nic& n = h.nics[g.nic];
    EXPECT_EQ(SwitchOf(h, g.pci_node), SwitchOf(h, n.pci_node)) << g.pci << " uses " << n.name;
    EXPECT_EQ(g.numa, n.numa);
    ++users[g.nic];
  }
  for (int u : users) EXPECT_EQ(u, 2);
}

TEST(TopologyFilesTest, DgxEveryGpuGetsItsOwnRailAndPeersUseNvLink) {
  System s;
  s.hosts = {Load("dgx_8gpu_8nic.xml"), Load("dgx_8gpu_8nic.xml")};
  s.hosts[0].key = "dgx0";
  s.hosts[1].key = "dgx1";
  const Host& h = s.hosts[0];
  ASSERT_EQ(h.gpus.size(), 8u);
  ASSERT_EQ(h.nics.size(), 8u);
  std::set<int> rails;
  for (const Gpu& g : h.gpus) {
    ASSERT_GE(g.nic, 0);
    EXPECT_EQ(SwitchOf(h, g.pci_node), SwitchOf(h, h.nics[g.nic].pci_node)) << g.pci;
    rails.insert(h.nics[g.nic].rail);
  }
  EXPECT_EQ(rails.size(), 8u) << "two GPUs and two NICs per switch: one rail each";
  for (size_t g = 0; g < h.gpus.size(); ++g) {
    EXPECT_EQ(s.hosts[1].gpus[g].nic, h.gpus[g].nic) << "identical hosts number their rails the same way";
  }
  PathResolver r(s);
  for (int l : r.P2P({0, 0}, {0, 7})) EXPECT_EQ(r.links()[l].name.rfind("nvl-", 0), 0u) << r.links()[l].name;
  // GPU g of each host talks over rail(g): two rails never share a link.
  const std::vector<int> rail_a = r.P2P({0, 0}, {1, 0});
  const std::vector<int> rail_b = r.P2P({0, 5}, {1, 5});
  for (int l : rail_a) {
    for (int m : rail_b) EXPECT_NE(l, m) << r.links()[l].name;
  }
}

TEST(TopologyFilesTest, CloudVmGpusSpreadOverTheTwoNics) {
  const Host h = Load("cloud_2gpu_2nic.xml");
  ASSERT_EQ(h.gpus.size(), 2u);
  ASSERT_EQ(h.nics.size(), 2u);
  EXPECT_EQ(h.numa_nodes, 1);
  EXPECT_EQ(h.nics[h.gpus[0].nic].rail, 0);
  EXPECT_EQ(h.nics[h.gpus[1].nic].rail, 1);
  for (const Nic& n : h.nics) {
    EXPECT_EQ(n.link_layer, LinkLayer::kEthernet);
    EXPECT_EQ(n.name, n.pci) << "a NIC known by its bus id only is named by it";
  }
  EXPECT_EQ(PciPathType(h, h.gpus[0].pci_node, 0, h.nics[0].pci_node, 0), PathType::kPix);
}

}  // namespace
}  // namespace trirace::topo
