#include "topology/discovery/nccl_xml.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace trirace::topo {
namespace {

// PCIe Gbit/s per lane after line encoding.
constexpr double kGen3Lane = 8.0 * 128 / 130;
constexpr double kGen4Lane = 16.0 * 128 / 130;
constexpr double kGen5Lane = 32.0 * 128 / 130;

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(TRIRACE_TOPO_TEST_DATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Host ParseData(const std::string& name) {
  const std::string text = ReadData(name);
  EXPECT_FALSE(text.empty()) << name << " missing";
  absl::StatusOr<Host> h = ParseNcclTopoXml(text, name);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *std::move(h) : Host{};
}

Host ParseText(const std::string& text) {
  absl::StatusOr<Host> h = ParseNcclTopoXml(text, "inline.xml");
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *std::move(h) : Host{};
}

// The bus id of the switch a PCI node hangs under ("" for none).
std::string SwitchOf(const Host& h, int node) {
  if (node < 0 || h.pci[node].parent < 0) return "";
  const PciNode& up = h.pci[h.pci[node].parent];
  return up.is_switch ? up.busid : "";
}

// Switch bus id -> the NIC names under it, and -> the GPU bus ids under it.
std::map<std::string, std::vector<std::string>> NicsBySwitch(const Host& h) {
  std::map<std::string, std::vector<std::string>> out;
  for (const Nic& n : h.nics) out[SwitchOf(h, n.pci_node)].push_back(n.name);
  return out;
}
std::map<std::string, std::vector<std::string>> GpusBySwitch(const Host& h) {
  std::map<std::string, std::vector<std::string>> out;
  for (const Gpu& g : h.gpus) out[SwitchOf(h, g.pci_node)].push_back(g.pci);
  return out;
}

bool Noted(const Host& h, const std::string& fact) {
  for (const Host::Provenance& p : h.provenance) {
    if (p.fact == fact) return p.source == Source::kNcclXml;
  }
  return false;
}

// ---- What holds for every file ----

struct FileCase {
  const char* file;
  size_t gpus, nics;
  int numa_nodes, switches, gpus_per_switch, nics_per_switch;
  LinkLayer layer;
  double nic_gbps;    // every NIC
  double pci_gbps;    // every switch's and GPU's link
  bool gpu_elements;  // <gpu>/<nic> children present (not a PCI-tree-only file)
};

class NcclXmlFileTest : public ::testing::TestWithParam<FileCase> {};

TEST_P(NcclXmlFileTest, CountsPlacementAndLinks) {
  const FileCase& c = GetParam();
  const Host h = ParseData(c.file);
  EXPECT_TRUE(h.key.empty()) << "the caller names the host";
  EXPECT_EQ(h.gpus.size(), c.gpus);
  EXPECT_EQ(h.nics.size(), c.nics);
  EXPECT_EQ(h.numa_nodes, c.numa_nodes);

  int switches = 0;
  for (const PciNode& p : h.pci) {
    if (!p.is_switch) continue;
    ++switches;
    EXPECT_EQ(p.parent, -1) << p.busid << ": switches hang off the CPU";
    EXPECT_NEAR(p.link_gbps, c.pci_gbps, 1e-6) << p.busid;
  }
  EXPECT_EQ(switches, c.switches);
  EXPECT_EQ(h.pci.size(), static_cast<size_t>(switches) + c.gpus + c.nics) << "one node per device";

  for (const auto& [sw, gpus] : GpusBySwitch(h)) {
    EXPECT_FALSE(sw.empty()) << "every GPU sits under a switch";
    EXPECT_EQ(static_cast<int>(gpus.size()), c.gpus_per_switch) << sw;
  }
  for (const auto& [sw, nics] : NicsBySwitch(h)) {
    EXPECT_FALSE(sw.empty()) << "every NIC sits under a switch";
    EXPECT_EQ(static_cast<int>(nics.size()), c.nics_per_switch) << sw;
  }
  for (const Gpu& g : h.gpus) {
    ASSERT_GE(g.pci_node, 0);
    EXPECT_EQ(h.pci[g.pci_node].busid, g.pci);
    EXPECT_EQ(h.pci[g.pci_node].numa, g.numa);
    EXPECT_NEAR(h.pci[g.pci_node].link_gbps, c.pci_gbps, 1e-6) << g.pci;
    EXPECT_EQ(g.nic, -1) << "AssignNics, not the parser, picks NICs";
  }
  for (const Nic& n : h.nics) {
    ASSERT_GE(n.pci_node, 0);
    EXPECT_EQ(h.pci[n.pci_node].busid, n.pci);
    EXPECT_EQ(h.pci[n.pci_node].numa, n.numa);
    EXPECT_EQ(n.link_layer, c.layer) << n.name;
    EXPECT_DOUBLE_EQ(n.gbps, c.nic_gbps) << n.name;
    EXPECT_EQ(n.port, 1);
    EXPECT_EQ(n.rail, -1);
  }
  EXPECT_TRUE(Noted(h, "pci"));
  EXPECT_TRUE(Noted(h, "gpus"));
  EXPECT_TRUE(Noted(h, "nics"));
  EXPECT_EQ(Noted(h, "nvlink"), c.gpu_elements) << "a PCI-tree-only file knows nothing of NVLink";
  EXPECT_EQ(Noted(h, "nic rates"), c.gpu_elements);
}

TEST_P(NcclXmlFileTest, EveryTruncationIsAnErrorWithFileAndLineOrAValidPrefix) {
  const FileCase& c = GetParam();
  const std::string text = ReadData(c.file);
  const std::string body_end = text.substr(0, text.rfind("</system>"));
  for (size_t len = 0; len < body_end.size(); ++len) {
    absl::StatusOr<Host> h = ParseNcclTopoXml(text.substr(0, len), c.file);
    ASSERT_FALSE(h.ok()) << "prefix of " << len << " bytes parsed";
    ASSERT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument) << h.status();
    ASSERT_TRUE(absl::StartsWith(h.status().message(), absl::StrCat(c.file, ":"))) << h.status();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, NcclXmlFileTest,
    ::testing::Values(
        FileCase{"pcie_8gpu_4nic.xml", 8, 4, 2, 4, 2, 1, LinkLayer::kInfiniBand, 200, 16 * kGen4Lane, true},
        FileCase{"dgx_8gpu_8nic.xml", 8, 8, 2, 4, 2, 2, LinkLayer::kInfiniBand, 400, 16 * kGen5Lane, true},
        FileCase{"cloud_2gpu_2nic.xml", 2, 2, 1, 1, 2, 2, LinkLayer::kEthernet, 0, 16 * kGen4Lane, false}),
    [](const ::testing::TestParamInfo<FileCase>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

// ---- Each file's own facts ----

TEST(NcclXmlTest, PcieServerPairsEachSwitchsGpusWithItsNic) {
  const Host h = ParseData("pcie_8gpu_4nic.xml");
  ASSERT_EQ(h.gpus.size(), 8u);
  const std::map<std::string, std::vector<std::string>> gpus = {
      {"0000:17:00.0", {"0000:18:00.0", "0000:19:00.0"}},
      {"0000:3a:00.0", {"0000:3b:00.0", "0000:3c:00.0"}},
      {"0000:85:00.0", {"0000:86:00.0", "0000:87:00.0"}},
      {"0000:ae:00.0", {"0000:af:00.0", "0000:b0:00.0"}}};
  const std::map<std::string, std::vector<std::string>> nics = {
      {"0000:17:00.0", {"mlx5_0"}},
      {"0000:3a:00.0", {"mlx5_1"}},
      {"0000:85:00.0", {"mlx5_2"}},
      {"0000:ae:00.0", {"mlx5_3"}}};
  EXPECT_EQ(GpusBySwitch(h), gpus);
  EXPECT_EQ(NicsBySwitch(h), nics) << "the NIC listed before the GPUs on 3a is placed all the same";
  for (size_t g = 0; g < h.gpus.size(); ++g) {
    EXPECT_EQ(h.gpus[g].dev, static_cast<int>(g));
    EXPECT_EQ(h.gpus[g].numa, g < 4 ? 0 : 1) << "GPU " << g;
    EXPECT_TRUE(h.gpus[g].nvlinks.empty());
    EXPECT_EQ(h.gpus[g].nvlink_gbps, 0);
  }
  EXPECT_EQ(h.FindNic("mlx5_1"), 1);
  EXPECT_EQ(h.nics[h.FindNic("mlx5_3")].pci, "0000:b1:00.0");
  EXPECT_EQ(h.nics[h.FindNic("mlx5_2")].numa, 1);
}

TEST(NcclXmlTest, DgxGpusShareAnNvSwitchAndTwoNicsPerSwitch) {
  const Host h = ParseData("dgx_8gpu_8nic.xml");
  ASSERT_EQ(h.gpus.size(), 8u);
  for (const Gpu& g : h.gpus) {
    ASSERT_EQ(g.nvlinks.size(), 1u) << g.pci;
    EXPECT_EQ(g.nvlinks[0].target, "nvswitch");
    EXPECT_EQ(g.nvlinks[0].count, 18);
    EXPECT_DOUBLE_EQ(g.nvlink_gbps, 200) << "NVLink 4: 25 GB/s per link and direction";
  }
  const std::map<std::string, std::vector<std::string>> nics = {{"0000:15:00.0", {"mlx5_0", "mlx5_1"}},
                                                                {"0000:3d:00.0", {"mlx5_2", "mlx5_3"}},
                                                                {"0000:97:00.0", {"mlx5_4", "mlx5_5"}},
                                                                {"0000:bd:00.0", {"mlx5_6", "mlx5_7"}}};
  EXPECT_EQ(NicsBySwitch(h), nics);
  EXPECT_EQ(SwitchOf(h, h.gpus[h.FindGpu("0000:1B:00.0")].pci_node), "0000:15:00.0");
  EXPECT_EQ(SwitchOf(h, h.gpus[h.FindGpu("d1:00.0")].pci_node), "0000:bd:00.0");
  EXPECT_EQ(h.gpus[h.FindGpu("0000:d1:00.0")].dev, 7);
  EXPECT_EQ(h.gpus[h.FindGpu("0000:d1:00.0")].numa, 1);
}

TEST(NcclXmlTest, CloudVmNicsAreNamedByBusIdAndHaveNoRate) {
  const Host h = ParseData("cloud_2gpu_2nic.xml");
  ASSERT_EQ(h.nics.size(), 2u);
  EXPECT_EQ(h.nics[0].name, "0003:00:00.0");
  EXPECT_EQ(h.nics[1].name, "0004:00:00.0");
  EXPECT_EQ(h.FindNic("0004:00:00.0"), 1);
  for (const Nic& n : h.nics) EXPECT_NEAR(h.pci[n.pci_node].link_gbps, 16 * kGen3Lane, 1e-6);
  for (const Gpu& g : h.gpus) {
    EXPECT_EQ(g.dev, -1) << "no <gpu> element, no CUDA index";
    EXPECT_TRUE(g.nvlinks.empty());
  }
  EXPECT_EQ(h.FindPci("ffff:ff:01.0"), 0);
  EXPECT_TRUE(h.pci[0].is_switch);
}

// ---- Pieces of the format, inline ----

std::string OneDevice(const std::string& attrs, const std::string& body = "") {
  return absl::StrCat("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" ", attrs,
                      body.empty() ? "/>\n" : absl::StrCat(">\n", body, "</pci>\n"), "</cpu>\n</system>\n");
}

struct LinkCase {
  const char* speed;
  const char* width;
  double gbps;
};
class NcclXmlLinkTest : public ::testing::TestWithParam<LinkCase> {};

TEST_P(NcclXmlLinkTest, PcieLinkIsRateTimesWidthLessEncoding) {
  const LinkCase& c = GetParam();
  const Host h = ParseText(OneDevice(absl::StrCat("class=\"0x020700\" link_speed=\"", c.speed, "\" link_width=\"",
                                                  c.width, "\"")));
  ASSERT_EQ(h.pci.size(), 1u);
  EXPECT_NEAR(h.pci[0].link_gbps, c.gbps, 1e-9) << c.speed << " x" << c.width;
}

INSTANTIATE_TEST_SUITE_P(Speeds, NcclXmlLinkTest,
                         ::testing::Values(LinkCase{"2.5 GT/s", "1", 2.0},  // 8b/10b
                                           LinkCase{"5 GT/s", "4", 16.0},
                                           LinkCase{"8.0 GT/s PCIe", "16", 16 * kGen3Lane},  // 128b/130b
                                           LinkCase{"16.0 GT/s PCIe", "8", 8 * kGen4Lane},
                                           LinkCase{"32.0 GT/s PCIe", "16", 16 * kGen5Lane},
                                           LinkCase{"Unknown", "16", 0}, LinkCase{"", "16", 0},
                                           LinkCase{"16.0 GT/s PCIe", "", 0}, LinkCase{"16.0 GT/s PCIe", "0", 0}));

TEST(NcclXmlTest, SeveralNetsUnderOneNicAreThePortsOfOneAdapter) {
  const Host h = ParseText(OneDevice("class=\"0x020000\"",
                                     "<nic>\n<net name=\"mlx5_0\" port=\"1\" speed=\"100000\"/>\n"
                                     "<net name=\"mlx5_0\" port=\"2\" speed=\"25000\"/>\n</nic>\n"));
  ASSERT_EQ(h.nics.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(h.nics[i].name, "mlx5_0");
    EXPECT_EQ(h.nics[i].port, i + 1);
    EXPECT_EQ(h.nics[i].pci, "0000:01:00.0");
    EXPECT_EQ(h.nics[i].pci_node, 0);
    EXPECT_EQ(h.nics[i].link_layer, LinkLayer::kEthernet);
  }
  EXPECT_DOUBLE_EQ(h.nics[0].gbps, 100);
  EXPECT_DOUBLE_EQ(h.nics[1].gbps, 25);
}

TEST(NcclXmlTest, NestedSwitchesKeepTheirParentsAndChildrenDecideTheType) {
  // Two switch levels; a NIC whose <nic> child outweighs an odd class; a
  // NIC outside the PCI tree (a virtual device under the CPU).
  const Host h = ParseText(
      "<system version=\"1\">\n"
      "<cpu numaid=\"1\">\n"
      "<pci busid=\"0000:10:00.0\" class=\"0x060400\">\n"
      "<pci busid=\"0000:11:00.0\" class=\"0x060400\">\n"
      "<pci busid=\"0000:12:00.0\" class=\"0x030000\"><gpu dev=\"3\" sm=\"70\"/></pci>\n"
      "<pci busid=\"0000:13:00.0\" class=\"0x028000\"><nic><net name=\"ib0\" speed=\"100000\"/></nic></pci>\n"
      "<pcilink target=\"0000:12:00.0\"/>\n"
      "</pci>\n"
      "</pci>\n"
      "<nic><net name=\"veth0\" speed=\"10000\"/></nic>\n"
      "</cpu>\n"
      "</system>\n");
  ASSERT_EQ(h.pci.size(), 4u);
  EXPECT_EQ(h.pci[0].parent, -1);
  EXPECT_EQ(h.pci[1].parent, 0);
  EXPECT_EQ(h.pci[2].parent, 1);
  EXPECT_EQ(h.pci[3].parent, 1);
  EXPECT_TRUE(h.pci[0].is_switch && h.pci[1].is_switch);
  EXPECT_FALSE(h.pci[2].is_switch || h.pci[3].is_switch);
  for (const PciNode& p : h.pci) EXPECT_EQ(p.numa, 1);
  ASSERT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.gpus[0].dev, 3);
  EXPECT_EQ(h.gpus[0].pci_node, 2);
  ASSERT_EQ(h.nics.size(), 2u);
  EXPECT_EQ(h.nics[0].name, "ib0");
  EXPECT_EQ(h.nics[0].link_layer, LinkLayer::kUnknown);
  EXPECT_EQ(h.nics[1].name, "veth0");
  EXPECT_EQ(h.nics[1].pci, "");
  EXPECT_EQ(h.nics[1].pci_node, -1);
  EXPECT_EQ(h.nics[1].numa, 1);
  EXPECT_EQ(h.numa_nodes, 1);
}

TEST(NcclXmlTest, NvLinksToGpusKeepBusIdsAndNvSwitchChipsMergeIntoOneDomain) {
  // A100 style: one <nvlink> per NVSwitch chip; and a direct GPU link.
  std::string links;
  for (int s = 0; s < 6; ++s) {
    links += absl::StrCat("<nvlink target=\"0000:c", s, ":00.0\" count=\"2\" tclass=\"0x068000\"/>\n");
  }
  links += "<nvlink target=\"0000:0A:00.0\" count=\"4\" tclass=\"0x030200\"/>\n<c2c bw=\"40\" count=\"10\"/>\n";
  const Host h =
      ParseText(OneDevice("class=\"0x030200\"", absl::StrCat("<gpu dev=\"0\" sm=\"80\">\n", links, "</gpu>\n")));
  ASSERT_EQ(h.gpus.size(), 1u);
  const std::vector<Gpu::NvLink>& l = h.gpus[0].nvlinks;
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].target, "nvswitch");
  EXPECT_EQ(l[0].count, 12);
  EXPECT_EQ(l[1].target, "0000:0a:00.0");
  EXPECT_EQ(l[1].count, 4);
  EXPECT_DOUBLE_EQ(h.gpus[0].nvlink_gbps, 200);
}

// ---- Bad input: InvalidArgument naming the file, the line, what was expected ----

struct BadCase {
  const char* name;
  const char* text;
  const char* message;  // after "bad.xml:"
};
class NcclXmlBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(NcclXmlBadTest, IsAClearError) {
  const BadCase& c = GetParam();
  absl::StatusOr<Host> h = ParseNcclTopoXml(c.text, "bad.xml");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(h.status().message(), absl::StrCat("bad.xml:", c.message))) << h.status();
}


INSTANTIATE_TEST_SUITE_P(
    Inputs, NcclXmlBadTest,
    ::testing::Values(
        BadCase{"Empty", "", "1: empty file, expected a <system> element"},
        BadCase{"Blank", "  \n\n ", "1: empty file"},
        BadCase{"Truncated",
                "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\" class=\"0x060400\">\n"
                "<pci busid=\"0000:18:00.0\" class=\"0x030200\"/>\n",
                "3: malformed or truncated XML"},
        BadCase{"TruncatedInAnAttribute", "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:1",
                "3: malformed attribute in <pci>"},
        BadCase{"MismatchedTag", "<system>\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\">\n</cpu>\n</system>\n",
                "3: closing tag does not match <pci>"},
        BadCase{"UnknownElementInPci",
                "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\" class=\"0x060400\">\n"
                "<widget id=\"1\"/>\n</pci>\n</cpu>\n</system>\n",
                "4: unknown element <widget> in <pci>, expected <pci> or <gpu> or <nic>"},
        BadCase{"UnknownElementInSystem", "<system>\n<gpus/>\n</system>\n", "2: unknown element <gpus> in <system>"},
        BadCase{"GpuOutsidePci", "<system>\n<cpu numaid=\"0\">\n<gpu dev=\"0\"/>\n</cpu>\n</system>\n",
                "3: misplaced element <gpu> in <cpu>, expected <pci> or <nic>"},
        BadCase{"PciWithoutBusid",
                "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\" class=\"0x060400\">\n"
                "<pci class=\"0x030200\"/>\n</pci>\n</cpu>\n</system>\n",
                "4: <pci> without busid"},
        BadCase{"BadBusid", "<system>\n<cpu numaid=\"0\">\n<pci busid=\"gpu0\"/>\n</cpu>\n</system>\n",
                "3: <pci> busid=\"gpu0\", expected a PCI bus id"},
        BadCase{"DuplicateBusid",
                "<system>\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\"/>\n<pci busid=\"17:00.0\"/>\n"
                "</cpu>\n</system>\n",
                "4: duplicate <pci> busid=\"17:00.0\""},
        BadCase{"BadClass",
                "<system>\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\" class=\"gpu\"/>\n</cpu>\n</system>\n",
                "3: <pci> class=\"gpu\", expected a hex class"},
        BadCase{"CpuWithoutNumaid", "<system>\n<cpu arch=\"x86_64\">\n</cpu>\n</system>\n", "2: <cpu> without numaid"},
        BadCase{"NetWithoutName",
                "<system>\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\" class=\"0x020700\">\n<nic>\n"
                "<net speed=\"1\"/>\n</nic>\n</pci>\n</cpu>\n</system>\n",
                "5: <net> without name"},
        BadCase{"NetBadSpeed",
                "<system>\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\">\n<nic>\n<net name=\"x\" speed=\"fast\"/>\n"
                "</nic>\n</pci>\n</cpu>\n</system>\n",
                "5: <net> speed=\"fast\", expected Mbit/s"},
        BadCase{"NvLinkWithoutTarget",
                "<system>\n<cpu numaid=\"0\">\n<pci busid=\"0000:17:00.0\">\n<gpu dev=\"0\">\n<nvlink count=\"2\"/>\n"
                "</gpu>\n</pci>\n</cpu>\n</system>\n",
                "5: <nvlink> without target"},
        BadCase{"HwlocExport", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n</topology>\n",
                "2: root element <topology>, expected <system>"},
        BadCase{"TwoRoots", "<system/>\n<system/>\n", "2: <system> after </system>"},
        BadCase{"NoElement", "<?xml version=\"1.0\"?>\n", "1: no element, expected <system>"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace trirace::topo
