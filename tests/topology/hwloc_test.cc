// hwloc discovery: the hwloc XML exports of the three test machines, what
// becomes a GPU or a NIC, errors that name the file, and this machine.
#include "topology/discovery/hwloc.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "topology/discovery/load.h"
#include "topology/discovery/nccl_xml.h"
#include "topology/discovery/hwloc_module.h"

namespace trirace::topo {
namespace {

// PCIe Gbit/s per lane after line encoding.
constexpr double kGen3Lane = 8.0 * 128 / 130;
constexpr double kGen4Lane = 16.0 * 128 / 130;
constexpr double kGen5Lane = 32.0 * 128 / 130;
// hwloc keeps link speeds as a float of GB/s.
constexpr double kRateSlack = 1e-3;

// The stub of a build without hwloc answers Unimplemented to anything.
bool HwlocBuilt() { return ParseHwlocXml("", "probe").status().code() != absl::StatusCode::kUnimplemented; }

#define SKIP_WITHOUT_HWLOC() \
  if (!HwlocBuilt()) GTEST_SKIP() << "built without hwloc"

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(TRIRACE_TOPO_TEST_DATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Host ParseData(const std::string& name) {
  const std::string text = ReadData(name);
  EXPECT_FALSE(text.empty()) << name << " missing";
  absl::StatusOr<Host> h = ParseHwlocXml(text, name);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *std::move(h) : Host{};
}

// The bus id of the switch a PCI node hangs under ("" for none).
std::string SwitchOf(const Host& h, int node) {
  if (node < 0 || h.pci[node].parent < 0) return "";
  const PciNode& up = h.pci[h.pci[node].parent];
  return up.is_switch ? up.busid : "";
}

// Where every switch, GPU and NIC is, one line each, in a form two sources
// of the same machine give alike (no rates hwloc cannot know, no dev).
std::string Placement(const Host& h) {
  std::vector<std::string> lines = {absl::StrCat("numa nodes ", h.numa_nodes)};
  for (const PciNode& p : h.pci) {
    if (!p.is_switch) continue;
    lines.push_back(absl::StrCat("switch ", p.busid, " numa ", p.numa, " under ", p.parent < 0 ? "cpu" : h.pci[p.parent].busid));
  }
  for (const Gpu& g : h.gpus) {
    lines.push_back(absl::StrCat("gpu ", g.pci, " numa ", g.numa, " under ", SwitchOf(h, g.pci_node)));
  }
  for (const Nic& n : h.nics) {
    lines.push_back(absl::StrCat("nic ", n.name, " ", n.pci, " port ", n.port, " numa ", n.numa, " ",
                                 LinkLayerName(n.link_layer), " under ", SwitchOf(h, n.pci_node)));
  }
  return absl::StrJoin(lines, "\n");
}

Source SourceOf(const Host& h, const std::string& fact) {
  for (const Host::Provenance& p : h.provenance) {
    if (p.fact == fact) return p.source;
  }
  return Source::kUnknown;
}

// ---- The three test machines ----

struct FileCase {
  const char* file;  // the hwloc export; the NCCL file is <base>.xml
  size_t gpus, nics;
  int numa_nodes, switches, gpus_per_switch, nics_per_switch;
  LinkLayer layer;
  double switch_gbps;  // every switch's and GPU's link to its parent
  double nic_link_gbps;
};

class HwlocFileTest : public ::testing::TestWithParam<FileCase> {};

TEST_P(HwlocFileTest, CountsPlacementAndLinkRates) {
  SKIP_WITHOUT_HWLOC();
  const FileCase& c = GetParam();
  const Host h = ParseData(c.file);
  EXPECT_TRUE(h.key.empty()) << "the caller names the host";
  EXPECT_EQ(h.gpus.size(), c.gpus);
  EXPECT_EQ(h.nics.size(), c.nics);
  EXPECT_EQ(h.numa_nodes, c.numa_nodes);

  int switches = 0;
  std::map<std::string, int> gpus_under, nics_under;
  for (const PciNode& p : h.pci) {
    if (!p.is_switch) continue;
    ++switches;
    EXPECT_EQ(p.parent, -1) << p.busid << ": a root port is no node; switches hang off the CPU";
    EXPECT_NEAR(p.link_gbps, c.switch_gbps, kRateSlack) << p.busid;
  }
  EXPECT_EQ(switches, c.switches);
  EXPECT_EQ(h.pci.size(), static_cast<size_t>(switches) + c.gpus + c.nics)
      << "one node per switch, GPU and NIC: downstream ports are no nodes";
  for (size_t i = 0; i < h.gpus.size(); ++i) {
    const Gpu& g = h.gpus[i];
    ASSERT_GE(g.pci_node, 0);
    EXPECT_EQ(h.pci[g.pci_node].busid, g.pci);
    EXPECT_EQ(h.pci[g.pci_node].numa, g.numa);
    EXPECT_NEAR(h.pci[g.pci_node].link_gbps, c.switch_gbps, kRateSlack) << g.pci;
    EXPECT_EQ(g.dev, -1) << "CUDA's numbering is not hwloc's";
    EXPECT_TRUE(g.nvlinks.empty());
    EXPECT_EQ(g.nic, -1) << "AssignNics, not the parser, picks NICs";
    if (i > 0) {
      EXPECT_LT(h.gpus[i - 1].pci, g.pci) << "GPUs in bus id order";
    }
    ++gpus_under[SwitchOf(h, g.pci_node)];
  }
  for (const Nic& n : h.nics) {
    ASSERT_GE(n.pci_node, 0);
    EXPECT_EQ(h.pci[n.pci_node].busid, n.pci);
    EXPECT_EQ(h.pci[n.pci_node].numa, n.numa);
    EXPECT_NEAR(h.pci[n.pci_node].link_gbps, c.nic_link_gbps, kRateSlack) << n.name;
    EXPECT_EQ(n.link_layer, c.layer) << n.name;
    EXPECT_EQ(n.gbps, 0) << n.name << ": hwloc records no port rate";
    EXPECT_EQ(n.port, 1);
    EXPECT_EQ(n.rail, -1);
    ++nics_under[SwitchOf(h, n.pci_node)];
  }
  for (const auto& [sw, count] : gpus_under) {
    EXPECT_FALSE(sw.empty()) << "every GPU sits under a switch";
    EXPECT_EQ(count, c.gpus_per_switch) << sw;
  }
  for (const auto& [sw, count] : nics_under) {
    EXPECT_FALSE(sw.empty()) << "every NIC sits under a switch";
    EXPECT_EQ(count, c.nics_per_switch) << sw;
  }
  EXPECT_EQ(SourceOf(h, "pci"), Source::kHwloc);
  EXPECT_EQ(SourceOf(h, "gpus"), Source::kHwloc);
  EXPECT_EQ(SourceOf(h, "nics"), Source::kHwloc);
  EXPECT_EQ(SourceOf(h, "nic rates"), Source::kUnknown) << "hwloc knows no port rate";
  EXPECT_EQ(SourceOf(h, "nvlink"), Source::kUnknown) << "hwloc knows no NVLink";
}

TEST_P(HwlocFileTest, DescribesTheMachineOfTheNcclFile) {
  SKIP_WITHOUT_HWLOC();
  const std::string file = GetParam().file;
  const std::string nccl_file = file.substr(0, file.find('.')) + ".xml";
  const absl::StatusOr<Host> nccl = ParseNcclTopoXml(ReadData(nccl_file), nccl_file);
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  const Host hwloc = ParseData(file);
  EXPECT_EQ(Placement(hwloc), Placement(*nccl)) << "same bus ids, NUMA nodes, switches, NIC names";
  for (const PciNode& p : nccl->pci) {
    const int mine = hwloc.FindPci(p.busid);
    ASSERT_GE(mine, 0) << p.busid;
    EXPECT_NEAR(hwloc.pci[mine].link_gbps, p.link_gbps, kRateSlack) << p.busid;
  }
}

TEST_P(HwlocFileTest, TruncatedOrCommentedFiles) {
  SKIP_WITHOUT_HWLOC();
  const FileCase& c = GetParam();
  const std::string text = ReadData(c.file);
  const size_t end = text.rfind("</topology>");
  ASSERT_NE(end, std::string::npos);
  // Every 13th prefix (and the last ones) keeps the test quick.
  for (size_t len = 0; len < end; len += len + 20 < end ? 13 : 1) {
    const absl::StatusOr<Host> h = ParseHwlocXml(text.substr(0, len), c.file);
    ASSERT_FALSE(h.ok()) << "prefix of " << len << " bytes parsed";
    ASSERT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument) << h.status();
    ASSERT_TRUE(absl::StartsWith(h.status().message(), absl::StrCat(c.file, ":"))) << h.status();
  }
  // hwloc's own reader (without libxml2) refuses comments, blanks before the
  // root element and CR LF line ends: a hand-edited file may have them all.
  std::string edited = absl::StrCat("\n ", text);
  edited.insert(edited.find("<topology"), "<!-- hand-edited -->\n\n");
  edited.insert(edited.find("<object type=\"Bridge\""), "<!-- <object type=\"PCIDev\"/> -->\n");
  edited = absl::StrReplaceAll(edited, {{"\n", "\r\n"}});
  const absl::StatusOr<Host> h = ParseHwlocXml(edited, c.file);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(Placement(*h), Placement(ParseData(c.file)));
}

INSTANTIATE_TEST_SUITE_P(
    Files, HwlocFileTest,
    ::testing::Values(FileCase{"pcie_8gpu_4nic.hwloc.xml", 8, 4, 2, 4, 2, 1, LinkLayer::kInfiniBand, 16 * kGen4Lane,
                               16 * kGen4Lane},
                      FileCase{"dgx_8gpu_8nic.hwloc.xml", 8, 8, 2, 4, 2, 2, LinkLayer::kInfiniBand, 16 * kGen5Lane,
                               16 * kGen5Lane},
                      FileCase{"cloud_2gpu_2nic.hwloc.xml", 2, 2, 1, 1, 2, 2, LinkLayer::kEthernet, 16 * kGen4Lane,
                               16 * kGen3Lane}),
    [](const ::testing::TestParamInfo<FileCase>& info) {
      const std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(HwlocTest, PcieServerNamesNicsByTheirRdmaDevice) {
  SKIP_WITHOUT_HWLOC();
  const Host h = ParseData("pcie_8gpu_4nic.hwloc.xml");
  ASSERT_EQ(h.nics.size(), 4u) << "an IPoIB netdev is the same adapter as its RDMA device";
  EXPECT_EQ(h.FindNic("ibp26s0"), -1);
  ASSERT_GE(h.FindNic("mlx5_1"), 0);
  EXPECT_EQ(h.nics[h.FindNic("mlx5_1")].pci, "0000:3d:00.0");
  EXPECT_EQ(SwitchOf(h, h.nics[h.FindNic("mlx5_1")].pci_node), "0000:3a:00.0")
      << "listed before the switch's GPUs, placed all the same";
  EXPECT_EQ(h.nics[h.FindNic("mlx5_2")].numa, 1);
  EXPECT_EQ(h.gpus[h.FindGpu("0000:b0:00.0")].numa, 1);
  EXPECT_EQ(h.FindPci("0000:16:01.0"), -1) << "root ports are no nodes";
  EXPECT_EQ(h.FindPci("0000:18:01.0"), -1) << "downstream ports are no nodes";
}

TEST(HwlocTest, LoadTopologyFileReadsHwlocExports) {
  SKIP_WITHOUT_HWLOC();
  const absl::StatusOr<System> s =
      LoadTopologyFile(std::string(TRIRACE_TOPO_TEST_DATA) + "/dgx_8gpu_8nic.hwloc.xml", "dgx3");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->hosts.size(), 1u);
  const Host& h = s->hosts[0];
  EXPECT_EQ(h.key, "dgx3");
  EXPECT_EQ(SourceOf(h, "gpus"), Source::kHwloc);
  for (const Gpu& g : h.gpus) {
    ASSERT_GE(g.nic, 0) << "AssignNics ran";
    EXPECT_EQ(SwitchOf(h, g.pci_node), SwitchOf(h, h.nics[g.nic].pci_node)) << g.pci;
  }
}

// ---- What becomes what: a small machine written inline ----

// A one-socket machine whose host bridge holds `devices` (XML objects).
std::string Machine(const std::string& devices) {
  const std::string sets =
      R"(cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001")";
  return absl::StrCat(R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" )",
                      sets, R"( gp_index="1">
    <object type="Package" os_index="0" )",
                      sets, R"( gp_index="2">
      <object type="NUMANode" os_index="0" )",
                      sets, R"( gp_index="3" local_memory="1073741824"/>
      <object type="Core" os_index="0" )",
                      sets, R"( gp_index="4">
        <object type="PU" os_index="0" )",
                      sets, R"( gp_index="5"/>
      </object>
      <object type="Bridge" gp_index="6" bridge_type="0-1" depth="0" bridge_pci="0000:[00-00]">
)",
                      devices, R"(      </object>
    </object>
  </object>
</topology>
)");
}

std::string PciDev(int gp, const std::string& busid, const std::string& type, const std::string& osdevs = "") {
  const std::string head = absl::StrCat(R"(        <object type="PCIDev" gp_index=")", gp, R"(" pci_busid=")", busid,
                                        R"(" pci_type=")", type, R"(" pci_link_speed="0.000000")");
  return osdevs.empty() ? absl::StrCat(head, "/>\n") : absl::StrCat(head, ">\n", osdevs, "        </object>\n");
}

std::string OsDev(int gp, const std::string& name, int type, const std::string& infos = "") {
  return absl::StrCat(R"(          <object type="OSDev" gp_index=")", gp, R"(" name=")", name, R"(" osdev_type=")",
                      type, R"(">)", infos, "</object>\n");
}

constexpr int kNetwork = 2;
constexpr int kOpenFabrics = 3;
constexpr int kCoProc = 5;

TEST(HwlocTest, WhatBecomesAGpuOrANic) {
  SKIP_WITHOUT_HWLOC();
  const std::string xml = Machine(
      PciDev(10, "0000:00:02.0", "0300 [1a03:2000] [1a03:2000] 41") +  // a BMC's VGA: no GPU
      PciDev(11, "0000:00:03.0", "0200 [1af4:1041] [1af4:1041] 01", OsDev(12, "eth0", kNetwork)) +
      PciDev(13, "0000:00:04.0", "0200 [15b3:101d] [15b3:0016] 00",  // RoCE: the RDMA device names it
             OsDev(14, "ens4np0", kNetwork) + OsDev(15, "mlx5_0", kOpenFabrics)) +
      PciDev(16, "0000:00:05.0", "0207 [15b3:101b] [15b3:0007] 00",
             OsDev(17, "ib0", kNetwork) + OsDev(18, "mlx5_1", kOpenFabrics, R"(<info name="Port1State" value="4"/>)")) +
      PciDev(19, "0000:00:06.0", "0207 [15b3:101b] [15b3:0007] 00",  // told Ethernet by an annotation
             OsDev(20, "mlx5_2", kOpenFabrics, R"(<info name="Port1LinkLayer" value="Ethernet"/>)")) +
      PciDev(21, "0000:00:07.0", "0302 [10de:2330] [10de:16c1] a1") +
      PciDev(22, "0000:00:08.0", "0380 [8086:56c0] [8086:4905] 08", OsDev(23, "ze0", kCoProc)) +
      PciDev(24, "0000:00:09.0", "0108 [144d:a80a] [144d:a801] 00", OsDev(25, "nvme0n1", 0)) +
      PciDev(26, "0000:00:0a.0", "0207 [15b3:1021] [15b3:0041] 00",  // an HCA with two ports on one function
             OsDev(27, "mlx4_0", kOpenFabrics,
                   R"(<info name="Port1State" value="4"/><info name="Port2State" value="1"/>)")) +
      PciDev(28, "0000:00:0b.0", "0207 [15b3:101b] [15b3:0007] 00", OsDev(29, "ib3", kNetwork)));
  const absl::StatusOr<Host> h = ParseHwlocXml(xml, "inline.xml");
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<std::string> gpus;
  for (const Gpu& g : h->gpus) gpus.push_back(g.pci);
  EXPECT_EQ(gpus, (std::vector<std::string>{"0000:00:07.0", "0000:00:08.0"}))
      << "NVIDIA's, and another vendor's with a compute runtime";
  std::vector<std::string> nics;
  for (const Nic& n : h->nics) {
    nics.push_back(absl::StrCat(n.name, ":", n.port, " ", n.pci, " ", LinkLayerName(n.link_layer)));
    EXPECT_EQ(n.numa, 0);
    EXPECT_EQ(SwitchOf(*h, n.pci_node), "") << "devices on the host bridge hang off the CPU";
  }
  const std::string ib = std::string(LinkLayerName(LinkLayer::kInfiniBand));
  const std::string eth = std::string(LinkLayerName(LinkLayer::kEthernet));
  EXPECT_EQ(nics, (std::vector<std::string>{
                      "eth0:1 0000:00:03.0 " + eth, "mlx5_0:1 0000:00:04.0 " + eth, "mlx5_1:1 0000:00:05.0 " + ib,
                      "mlx5_2:1 0000:00:06.0 " + eth, "mlx4_0:1 0000:00:0a.0 " + ib, "mlx4_0:2 0000:00:0a.0 " + ib,
                      "ib3:1 0000:00:0b.0 " + ib}));
  for (const PciNode& p : h->pci) {
    EXPECT_FALSE(p.is_switch) << p.busid;
    EXPECT_EQ(p.parent, -1) << p.busid;
    EXPECT_EQ(p.link_gbps, 0) << "hwloc's 0: unknown";
  }
  EXPECT_EQ(h->FindPci("0000:00:09.0"), -1) << "an NVMe drive is no part of the model";
  EXPECT_EQ(h->FindPci("0000:00:02.0"), -1);
}

// ---- Errors name the file ----

TEST(HwlocTest, ErrorsNameTheFileAndWhatIsWrong) {
  SKIP_WITHOUT_HWLOC();
  struct Bad {
    std::string text;
    std::string message;  // the whole message, or its start when it ends with "..."
  };
  const std::string machine = Machine("");
  const std::vector<Bad> cases = {
      {"", "x.xml: empty file, expected an hwloc XML export"},
      {" \n\t", "x.xml: empty file, expected an hwloc XML export"},
      {ReadData("pcie_8gpu_4nic.xml"),
       "x.xml: not an hwloc XML export: root element <system>, expected <topology>"},
      {"<?xml version=\"1.0\"?>\n<!-- nothing -->\n", "x.xml: not an hwloc XML export: no element..."},
      {"<topology version=\"2.0\">\n</topology>\n",
       "x.xml: not an hwloc XML export: <topology> holds no <object>, expected the Machine"},
      {machine.substr(0, machine.size() / 2), "x.xml:...: not an hwloc XML export: malformed or truncated XML..."},
      {absl::StrCat(machine.substr(0, machine.find("</object>")), "</objekt>\n", machine.substr(machine.find("</object>") + 9)),
       "x.xml:7: not an hwloc XML export: malformed or truncated XML (XML_ERROR_MISMATCHED_ELEMENT at <object>)..."},
      {machine + "<topology/>\n",
       "x.xml:15: not an hwloc XML export: <topology> after </topology>, expected one root element"},
      {"<topology version=\"2.0\">\n  <object type=\"Toaster\" os_index=\"0\"/>\n</topology>\n",
       "x.xml: not an hwloc XML export: hwloc ..."},
  };
  for (const Bad& b : cases) {
    const absl::StatusOr<Host> h = ParseHwlocXml(b.text, "x.xml");
    ASSERT_FALSE(h.ok()) << b.text;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument) << h.status();
    if (absl::EndsWith(b.message, "...")) {
      const std::string want = b.message.substr(0, b.message.size() - 3);
      const size_t hole = want.find("...");
      if (hole == std::string::npos) {
        EXPECT_TRUE(absl::StartsWith(h.status().message(), want)) << h.status();
      } else {
        EXPECT_TRUE(absl::StartsWith(h.status().message(), want.substr(0, hole))) << h.status();
        EXPECT_TRUE(absl::StrContains(h.status().message(), want.substr(hole + 3))) << h.status();
      }
    } else {
      EXPECT_EQ(h.status().message(), b.message);
    }
  }
}

// hwloc_bitmap_sscanf asserts on some malformed bitmaps (the first one
// the fuzzer found starts with a comma): the loader refuses them first,
// and still passes every form hwloc writes.
TEST(HwlocTest, MalformedBitmapsAreRefusedBeforeHwlocSeesThem) {
  SKIP_WITHOUT_HWLOC();
  const std::string machine = Machine("");
  const std::string good = R"(cpuset="0x00000001")";
  ASSERT_NE(machine.find(good), std::string::npos);
  auto with = [&](const std::string& value) {
    std::string text = machine;
    text.replace(text.find(good), good.size(), "cpuset=\"" + value + "\"");
    return ParseHwlocXml(text, "x.xml");
  };
  for (const char* bad : {",0x1", ",", "0x1,,0x2", "0x1,", "0xf...f,", "0xf...f,,0x1", "0xf...fx", "zz", "", "0x",
                          " 0x1", "-1", "0x123456789", "0x1, 0x2"}) {
    const absl::StatusOr<Host> h = with(bad);
    ASSERT_FALSE(h.ok()) << "'" << bad << "'";
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument) << h.status();
    EXPECT_TRUE(absl::StartsWith(h.status().message(), "x.xml:4: not an hwloc XML export: cpuset=\"")) << h.status();
    EXPECT_TRUE(absl::StrContains(h.status().message(), "expected an hwloc bitmap")) << h.status();
  }
  for (const char* ok : {"0x00000001", "0xf...f", "0xf...f,0x00000001", "0x00000003,0xffffffff", "1", "0xABCDEF01"}) {
    const absl::StatusOr<Host> h = with(ok);
    EXPECT_TRUE(h.ok()) << "'" << ok << "': " << h.status();
  }
}

TEST(HwlocTest, DuplicateBusIdsAreAnError) {
  SKIP_WITHOUT_HWLOC();
  const std::string xml = Machine(PciDev(10, "0000:00:03.0", "0302 [10de:2330] [10de:16c1] a1") +
                                  PciDev(11, "0000:00:03.0", "0302 [10de:2330] [10de:16c1] a1"));
  const absl::StatusOr<Host> h = ParseHwlocXml(xml, "twice.xml");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(), "twice.xml: PCI bus id 0000:00:03.0 listed twice");
}

// Found by hwloc_xml_fuzz (corpus/hwloc_xml_fuzz/crash-link-speed-inf):
// hwloc reads pci_link_speed with strtof, so "inf" or "1e39" gave a link of
// infinite Gbit/s. Whatever is not a finite positive speed is unknown (0).
TEST(HwlocTest, ALinkSpeedThatIsNoFiniteNumberIsUnknown) {
  SKIP_WITHOUT_HWLOC();
  for (const std::string speed : {"inf", "-inf", "1e39", "nan", "-3.5"}) {
    std::string xml = Machine(PciDev(10, "0000:00:03.0", "0302 [10de:2330] [10de:16c1] a1"));
    xml = absl::StrReplaceAll(xml, {{"pci_link_speed=\"0.000000\"", absl::StrCat("pci_link_speed=\"", speed, "\"")}});
    const absl::StatusOr<Host> h = ParseHwlocXml(xml, "speed.xml");
    ASSERT_TRUE(h.ok()) << speed << ": " << h.status();
    ASSERT_EQ(h->pci.size(), 1u) << speed;
    EXPECT_EQ(h->pci[0].link_gbps, 0) << speed;
  }
  std::string xml = Machine(PciDev(10, "0000:00:03.0", "0302 [10de:2330] [10de:16c1] a1"));
  xml = absl::StrReplaceAll(xml, {{"pci_link_speed=\"0.000000\"", "pci_link_speed=\"31.507692\""}});
  const absl::StatusOr<Host> h = ParseHwlocXml(xml, "speed.xml");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_NEAR(h->pci[0].link_gbps, 16 * kGen4Lane, kRateSlack) << "a real speed is kept";
}

// Found by hwloc_xml_fuzz (corpus/hwloc_xml_fuzz/leak-unknown-element-in-
// object): hwloc 2.9 refuses an element it does not know inside an <object>
// but leaks the object it was reading. Such children are refused before
// hwloc sees them, with the line; what hwloc takes still parses.
TEST(HwlocTest, ChildrenHwlocWouldLeakOnAreRefusedWithTheirLine) {
  SKIP_WITHOUT_HWLOC();
  const std::string eth = OsDev(12, "eth0", kNetwork);
  struct Bad {
    std::string osdev_children;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {"<infoX name=\"a\" value=\"b\"/>",
       "x.xml:13: not an hwloc XML export: <infoX> in <object type=\"OSDev\">, expected <object>, <info>, "
       "<page_type> or <userdata>"},
      {"<info name=\"a\" value=\"b\" colour=\"red\"/>",
       "x.xml:13: not an hwloc XML export: <info> in <object type=\"OSDev\"> with attribute colour, expected only "
       "name, value"},
      {"<info name=\"a\" value=\"b\"><info name=\"c\" value=\"d\"/></info>",
       "x.xml:13: not an hwloc XML export: <info> in <object type=\"OSDev\"> holds something, expected an empty "
       "element"},
      {"<info name=\"a\" value=\"b\">text</info>",
       "x.xml:13: not an hwloc XML export: <info> in <object type=\"OSDev\"> holds something, expected an empty "
       "element"},
      // corpus/hwloc_xml_fuzz/leak-text-in-object
      {"(<info name=\"a\" value=\"b\"/>",
       "x.xml:13: not an hwloc XML export: text in <object type=\"OSDev\">, expected only elements"},
      {"<page_type size=\"4096\" count=\"0\"/>",
       "x.xml:13: not an hwloc XML export: <page_type> in <object type=\"OSDev\">, expected <page_type> only in a "
       "NUMANode or the root object"},
      {"<distances nbobjs=\"2\"/>",
       "x.xml:13: not an hwloc XML export: <distances> in <object type=\"OSDev\">, expected <object>, <info>, "
       "<page_type> or <userdata>"},
  };
  for (const Bad& b : cases) {
    std::string with = absl::StrReplaceAll(eth, {{"></object>", absl::StrCat(">\n", b.osdev_children, "</object>")}});
    const std::string xml = Machine(PciDev(11, "0000:00:03.0", "0200 [1af4:1041] [1af4:1041] 01", with));
    const absl::StatusOr<Host> h = ParseHwlocXml(xml, "x.xml");
    ASSERT_FALSE(h.ok()) << b.osdev_children;
    EXPECT_EQ(h.status().message(), b.message);
  }
  std::string info = absl::StrReplaceAll(
      eth, {{"></object>", "><info name=\"Address\" value=\"aa:bb\"/><page_type size=\"1\"/></object>"}});
  const absl::StatusOr<Host> h =
      ParseHwlocXml(Machine(PciDev(11, "0000:00:03.0", "0200 [1af4:1041] [1af4:1041] 01", info)), "x.xml");
  ASSERT_FALSE(h.ok());
  info = absl::StrReplaceAll(eth, {{"></object>", "><info name=\"Address\" value=\"aa:bb\"/></object>"}});
  const absl::StatusOr<Host> ok =
      ParseHwlocXml(Machine(PciDev(11, "0000:00:03.0", "0200 [1af4:1041] [1af4:1041] 01", info)), "x.xml");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->nics.size(), 1u);
}

// Found by hwloc_xml_fuzz (corpus/hwloc_xml_fuzz/crash-nodeset-without-
// complete-nodeset): hwloc 2.9 takes a v2 object with a nodeset but no
// complete_nodeset (or the same of cpusets) and then dereferences the NULL
// set: a segmentation fault in hwloc_topology_load. Refused before.
TEST(HwlocTest, AnObjectWithASetButNotItsCompleteSetIsRefused) {
  SKIP_WITHOUT_HWLOC();
  const std::string machine = Machine("");
  const std::string numa = R"(<object type="NUMANode" os_index="0" )";
  for (const std::string set : {"nodeset", "cpuset"}) {
    const std::string complete = absl::StrCat(" complete_", set, "=\"0x00000001\"");
    const size_t at = machine.find(complete, machine.find(numa));
    ASSERT_NE(at, std::string::npos);
    const std::string xml = machine.substr(0, at) + machine.substr(at + complete.size());
    const absl::StatusOr<Host> h = ParseHwlocXml(xml, "x.xml");
    ASSERT_FALSE(h.ok()) << set;
    EXPECT_EQ(h.status().message(),
              absl::StrCat("x.xml:6: not an hwloc XML export: <object type=\"NUMANode\"> with only one of ", set,
                           " and complete_", set, ", expected both or neither"));
  }
}

// Found by hwloc_xml_fuzz (corpus/hwloc_xml_fuzz/leak-blank-inside-tag):
// XML that tinyxml2 takes but hwloc's own reader does not ("<  object",
// single quotes, a newline inside a value, &apos;) made hwloc give up
// partway (and leak). hwloc now reads it written again in its own layout;
// what cannot be written so is refused with its line.
TEST(HwlocTest, XmlHwlocsOwnReaderWouldNotTakeIsWrittenInItsLayout) {
  SKIP_WITHOUT_HWLOC();
  const std::string plain = Machine(PciDev(10, "0000:00:03.0", "0302 [10de:2330] [10de:16c1] a1"));
  std::string odd =
      absl::StrReplaceAll(plain, {{"<object type=\"PCIDev\" gp_index", "<  object type='PCIDev' gp_index"},
                                  {"<object type=\"Package\"", "<object\n type=\"Package\""}});
  odd.insert(odd.find("<object type=\"NUMANode\""), "<info name=\"Note\" value=\"it&apos;s&#10;two lines\"/>\n");
  const absl::StatusOr<Host> h = ParseHwlocXml(odd, "odd.xml");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(Placement(*h), Placement(*ParseHwlocXml(plain, "plain.xml")));
  ASSERT_EQ(h->gpus.size(), 1u);

  const std::string upper = absl::StrReplaceAll(plain, {{"gp_index=\"10\"", "GP_index=\"10\""}});
  EXPECT_EQ(ParseHwlocXml(upper, "x.xml").status().message(),
            "x.xml:11: not an hwloc XML export: attribute GP_index of <object>, expected hwloc's names");
  const std::string version = absl::StrReplaceAll(plain, {{"version=\"2.0\"", "version=\"two\""}});
  EXPECT_EQ(ParseHwlocXml(version, "x.xml").status().message(),
            "x.xml:3: not an hwloc XML export: <topology version=\"two\">, expected a version M.m");
}

// ---- This machine ----

TEST(HwlocTest, DiscoversThisMachine) {
  SKIP_WITHOUT_HWLOC();
  const absl::StatusOr<Host> h = DiscoverHwloc();
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_TRUE(h->key.empty());
  EXPECT_GE(h->numa_nodes, 1);
  for (const PciNode& p : h->pci) {
    EXPECT_LT(p.parent, static_cast<int>(h->pci.size())) << p.busid;
    if (p.parent >= 0) {
      EXPECT_TRUE(h->pci[p.parent].is_switch) << p.busid;
    }
  }
  for (const Gpu& g : h->gpus) {
    ASSERT_GE(g.pci_node, 0);
    EXPECT_EQ(h->pci[g.pci_node].busid, g.pci);
  }
  for (const Nic& n : h->nics) {
    EXPECT_FALSE(n.name.empty());
    if (n.pci_node >= 0) {
      EXPECT_EQ(h->pci[n.pci_node].busid, n.pci) << n.name;
    }
  }
  for (const Host::Provenance& p : h->provenance) EXPECT_EQ(p.source, Source::kHwloc) << p.fact;
}

// ---- The module (hwloc optional at run time) ----

TEST(HwlocModuleTest, IsFoundBesideThisProgramAndIsThisBuilds) {
  SKIP_WITHOUT_HWLOC();
  const std::string path = HwlocModulePath();
  EXPECT_TRUE(absl::EndsWith(path, "/libtrirace-topo-hwloc.so")) << path;
  const absl::StatusOr<const TriraceHwlocApiV1*> api = OpenHwlocModule(path);
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ((*api)->abi, kTriraceHwlocAbi);
  EXPECT_EQ((*api)->host_size, sizeof(Host));
}

TEST(HwlocModuleTest, AMissingModuleOrLibhwlocIsUnavailableWithTheLoadersWords) {
  const absl::StatusOr<const TriraceHwlocApiV1*> api = OpenHwlocModule("/nonexistent/libtrirace-topo-hwloc.so");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(api.status().message(), "hwloc module not loaded: /nonexistent/libtrirace-topo-hwloc.so"))
      << api.status();
}

TEST(HwlocModuleTest, ALibraryThatIsNotTheModuleIsRefused) {
  // Any shared library without the entry point: the C library will do.
  const absl::StatusOr<const TriraceHwlocApiV1*> api = OpenHwlocModule("libc.so.6");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(api.status().message(), "not the hwloc module of this build")) << api.status();
}

TEST(HwlocTest, WithoutHwlocBothSayWhy) {
  if (HwlocBuilt()) GTEST_SKIP() << "built with hwloc";
  EXPECT_EQ(DiscoverHwloc().status().code(), absl::StatusCode::kUnimplemented);
  const absl::Status s = ParseHwlocXml(ReadData("dgx_8gpu_8nic.hwloc.xml"), "dgx.xml").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(s.message(), "built without hwloc")) << s;
}

}  // namespace
}  // namespace trirace::topo
