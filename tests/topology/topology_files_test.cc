// The test topologies end to end, in each file format that describes them
// (an NCCL topology XML, an hwloc XML export): the file -> the model ->
// GPU <-> NIC affinity, rails and the links ops cross.
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "topology/affinity.h"
#include "topology/discovery/hwloc.h"
#include "topology/discovery/nccl_xml.h"
#include "topology/paths.h"

namespace trirace::topo {
namespace {

// PCIe Gbit/s per lane after line encoding.
constexpr double kGen3Lane = 8.0 * 128 / 130;
constexpr double kGen4Lane = 16.0 * 128 / 130;
constexpr double kGen5Lane = 32.0 * 128 / 130;
// hwloc keeps link speeds as a float of GB/s.
constexpr double kRateSlack = 1e-3;

// One file format of the test machines: <machine><suffix> in the data folder.
struct Format {
  const char* name;
  const char* suffix;
  absl::StatusOr<Host> (*parse)(absl::string_view text, absl::string_view origin);
  bool nic_rates;  // the format records NIC port rates
  bool nvlink;     // ... and NVLinks
};

class TopologyFilesTest : public ::testing::TestWithParam<Format> {
 protected:
  void SetUp() override {
    const absl::Status probe = GetParam().parse("", "probe").status();
    if (probe.code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << probe.message();
  }

  // The host of `machine` in this format, NICs assigned.
  Host Load(const std::string& machine) const {
    const std::string file = machine + GetParam().suffix;
    std::ifstream in(std::string(TRIRACE_TOPO_TEST_DATA) + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<Host> host = GetParam().parse(text.str(), file);
    EXPECT_TRUE(host.ok()) << host.status();
    Host h = host.ok() ? *std::move(host) : Host{};
    AssignNics(h);
    return h;
  }

  // The NIC rate the format gives for a NIC of `gbps` (0: it records none).
  double NicGbps(double gbps) const { return GetParam().nic_rates ? gbps : 0; }
};

// The switch a PCI endpoint hangs under (its parent's bus id).
std::string SwitchOf(const Host& h, int pci_node) {
  const int parent = h.pci.at(pci_node).parent;
  return parent < 0 ? "" : h.pci[parent].busid;
}

// Every switch's link, and each endpoint's under it, runs at `gbps`.
void ExpectLinkRates(const Host& h, double switch_gbps, double gpu_gbps, double nic_gbps) {
  for (const PciNode& p : h.pci) {
    if (p.is_switch) {
      EXPECT_NEAR(p.link_gbps, switch_gbps, kRateSlack) << p.busid;
    }
  }
  for (const Gpu& g : h.gpus) EXPECT_NEAR(h.pci.at(g.pci_node).link_gbps, gpu_gbps, kRateSlack) << g.pci;
  for (const Nic& n : h.nics) EXPECT_NEAR(h.pci.at(n.pci_node).link_gbps, nic_gbps, kRateSlack) << n.name;
}

TEST_P(TopologyFilesTest, PcieServerEachGpuUsesTheNicOnItsSwitch) {
  const Host h = Load("pcie_8gpu_4nic");
  ASSERT_EQ(h.gpus.size(), 8u);
  ASSERT_EQ(h.nics.size(), 4u);
  EXPECT_EQ(h.numa_nodes, 2);
  for (const Nic& n : h.nics) {
    EXPECT_EQ(n.name, "mlx5_" + std::to_string(n.rail)) << "rails in bus-id order";
    EXPECT_EQ(n.gbps, NicGbps(200));
    EXPECT_EQ(n.link_layer, LinkLayer::kInfiniBand);
  }
  std::vector<int> users(h.nics.size(), 0);
  for (const Gpu& g : h.gpus) {
    ASSERT_GE(g.nic, 0) << g.pci;
    const Nic& n = h.nics[g.nic];
    EXPECT_EQ(SwitchOf(h, g.pci_node), SwitchOf(h, n.pci_node)) << g.pci << " uses " << n.name;
    EXPECT_EQ(PciPathType(h, g.pci_node, g.numa, n.pci_node, n.numa), PathType::kPix) << g.pci;
    EXPECT_EQ(g.numa, n.numa);
    EXPECT_EQ(g.numa, g.pci < "0000:80" ? 0 : 1) << g.pci;
    ++users[g.nic];
  }
  for (int u : users) EXPECT_EQ(u, 2);
  ExpectLinkRates(h, 16 * kGen4Lane, 16 * kGen4Lane, 16 * kGen4Lane);
}

TEST_P(TopologyFilesTest, DgxEveryGpuGetsItsOwnRailAndPeersUseNvLinkWhereKnown) {
  System s;
  s.hosts = {Load("dgx_8gpu_8nic"), Load("dgx_8gpu_8nic")};
  s.hosts[0].key = "dgx0";
  s.hosts[1].key = "dgx1";
  const Host& h = s.hosts[0];
  ASSERT_EQ(h.gpus.size(), 8u);
  ASSERT_EQ(h.nics.size(), 8u);
  EXPECT_EQ(h.numa_nodes, 2);
  std::set<int> rails;
  for (const Gpu& g : h.gpus) {
    ASSERT_GE(g.nic, 0);
    const Nic& n = h.nics[g.nic];
    EXPECT_EQ(SwitchOf(h, g.pci_node), SwitchOf(h, n.pci_node)) << g.pci;
    EXPECT_EQ(g.numa, n.numa) << g.pci;
    EXPECT_EQ(n.gbps, NicGbps(400)) << n.name;
    EXPECT_EQ(n.link_layer, LinkLayer::kInfiniBand) << n.name;
    rails.insert(n.rail);
  }
  EXPECT_EQ(rails.size(), 8u) << "two GPUs and two NICs per switch: one rail each";
  for (size_t g = 0; g < h.gpus.size(); ++g) {
    EXPECT_EQ(s.hosts[1].gpus[g].nic, h.gpus[g].nic) << "identical hosts number their rails the same way";
  }
  ExpectLinkRates(h, 16 * kGen5Lane, 16 * kGen5Lane, 16 * kGen5Lane);

  PathResolver r(s);
  // GPUs 0 and 7 sit on different sockets: NVLink where the format knows
  // it, else up and down their PCIe trees.
  const std::vector<int> peer = r.P2P({0, 0}, {0, 7});
  ASSERT_FALSE(peer.empty());
  for (int l : peer) {
    const std::string& name = r.links()[l].name;
    if (GetParam().nvlink) {
      EXPECT_EQ(name.rfind("nvl-", 0), 0u) << name;
    } else {
      EXPECT_NE(name.rfind("nvl-", 0), 0u) << name;
    }
  }
  if (!GetParam().nvlink) {
    EXPECT_EQ(r.links()[peer.front()].name.rfind("pcie-up:", 0), 0u) << r.links()[peer.front()].name;
  }
  // GPU g of each host talks over rail(g): two rails never share a link.
  const std::vector<int> rail_a = r.P2P({0, 0}, {1, 0});
  const std::vector<int> rail_b = r.P2P({0, 5}, {1, 5});
  ASSERT_FALSE(rail_a.empty());
  for (int l : rail_a) {
    for (int m : rail_b) EXPECT_NE(l, m) << r.links()[l].name;
  }
}

TEST_P(TopologyFilesTest, CloudVmGpusSpreadOverTheTwoNics) {
  const Host h = Load("cloud_2gpu_2nic");
  ASSERT_EQ(h.gpus.size(), 2u);
  ASSERT_EQ(h.nics.size(), 2u);
  EXPECT_EQ(h.numa_nodes, 1);
  EXPECT_EQ(h.nics[h.gpus[0].nic].rail, 0);
  EXPECT_EQ(h.nics[h.gpus[1].nic].rail, 1);
  for (const Nic& n : h.nics) {
    EXPECT_EQ(n.link_layer, LinkLayer::kEthernet);
    EXPECT_EQ(n.name, n.pci) << "a NIC known by its bus id only is named by it";
    EXPECT_EQ(n.gbps, 0) << "neither file gives a rate";
    EXPECT_EQ(n.numa, 0);
  }
  EXPECT_EQ(PciPathType(h, h.gpus[0].pci_node, 0, h.nics[0].pci_node, 0), PathType::kPix);
  ExpectLinkRates(h, 16 * kGen4Lane, 16 * kGen4Lane, 16 * kGen3Lane);
}

INSTANTIATE_TEST_SUITE_P(Formats, TopologyFilesTest,
                         ::testing::Values(Format{"NcclXml", ".xml", &ParseNcclTopoXml, true, true},
                                           Format{"HwlocXml", ".hwloc.xml", &ParseHwlocXml, false, false}),
                         [](const ::testing::TestParamInfo<Format>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace trirace::topo
