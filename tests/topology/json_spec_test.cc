// The TriRace JSON spec (parse, errors, "like", round trips) and
// LoadTopologyFile's choice of format by content.
#include "topology/discovery/json_spec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"
#include "topo_builders.h"
#include "topology/affinity.h"
#include "topology/discovery/load.h"

namespace trirace::topo {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(TRIRACE_TOPO_TEST_DATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every field of a host, one line per part: equal text, equal hosts (with a
// readable diff when they are not).
std::string Describe(const Host& h, bool with_provenance = true) {
  std::vector<std::string> lines = {absl::StrCat("key=", h.key, " numa_nodes=", h.numa_nodes)};
  for (const PciNode& p : h.pci) {
    lines.push_back(absl::StrCat("pci ", p.busid, " parent=", p.parent, " numa=", p.numa, " switch=", p.is_switch,
                                 " gbps=", p.link_gbps));
  }
  for (const Gpu& g : h.gpus) {
    std::string links;
    for (const Gpu::NvLink& l : g.nvlinks) absl::StrAppend(&links, l.target, "x", l.count, " ");
    lines.push_back(absl::StrCat("gpu ", g.pci, " node=", g.pci_node, " numa=", g.numa, " dev=", g.dev,
                                 " nvlinks=", links, "@", g.nvlink_gbps, " nic=", g.nic));
  }
  for (const Nic& n : h.nics) {
    lines.push_back(absl::StrCat("nic ", n.name, " ", n.pci, " node=", n.pci_node, " numa=", n.numa, " port=", n.port,
                                 " layer=", LinkLayerName(n.link_layer), " gbps=", n.gbps, " rail=", n.rail));
  }
  if (with_provenance) {
    for (const Host::Provenance& p : h.provenance) lines.push_back(absl::StrCat(p.fact, ": ", SourceName(p.source)));
  }
  return absl::StrJoin(lines, "\n");
}

std::string Describe(const System& s, bool with_provenance = true) {
  std::string text = absl::StrCat("fabric ", FabricKindName(s.fabric.kind), " ", s.fabric.hosts_per_leaf, " ",
                                  s.fabric.oversubscription, "\n");
  for (const Host& h : s.hosts) absl::StrAppend(&text, Describe(h, with_provenance), "\n");
  return text;
}

System Parse(const std::string& text) {
  absl::StatusOr<System> s = ParseJsonSpec(text, "bed.json");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : System{};
}

// Bus ids in three spellings, parents after children, NUMA nodes inherited,
// one NVLink peer, and a host made "like" the first.
constexpr char kSpec[] = R"({
  "fabric": {"kind": "two_tier", "hosts_per_leaf": 4, "oversubscription": 2.5},
  "hosts": [
    {"key": "node0", "numa_nodes": 2,
     "pci": [{"busid": "11:00.0", "parent": "0000:10:00.0", "gbps": 256},
             {"busid": "0000:10:00.0", "switch": true, "numa": 1, "gbps": 256}],
     "gpus": [{"pci": "0000:11:00.0", "dev": 0, "nvlinks": [{"target": "0000:3B:00.0", "count": 4}],
               "nvlink_gbps": 200},
              {"pci": "0000:3b:00.0", "numa": 0, "dev": 1, "nvlinks": [{"target": "11:00.0", "count": 4}],
               "nvlink_gbps": 200}],
     "nics": [{"name": "mlx5_0", "pci": "0000:12:00.0", "numa": 1, "link_layer": "ib", "gbps": 400},
              {"name": "veth0", "link_layer": "eth", "port": 0}]},
    {"key": "node1", "like": "node0"}
  ]
})";

TEST(JsonSpecTest, ParsesTreeEndpointsAndFabric) {
  const System s = Parse(kSpec);
  EXPECT_EQ(s.fabric.kind, Fabric::Kind::kTwoTier);
  EXPECT_EQ(s.fabric.hosts_per_leaf, 4);
  EXPECT_EQ(s.fabric.oversubscription, 2.5);
  ASSERT_EQ(s.hosts.size(), 2u);
  const Host& h = s.hosts[0];
  EXPECT_EQ(h.key, "node0");
  EXPECT_EQ(h.numa_nodes, 2);
  // Listed nodes first, in order; then the endpoints not listed, GPUs first.
  ASSERT_EQ(h.pci.size(), 4u);
  EXPECT_EQ(h.pci[0].busid, "0000:11:00.0");
  EXPECT_EQ(h.pci[0].parent, 1);
  EXPECT_EQ(h.pci[0].numa, 1) << "inherited from the switch";
  EXPECT_FALSE(h.pci[0].is_switch);
  EXPECT_TRUE(h.pci[1].is_switch);
  EXPECT_EQ(h.pci[1].link_gbps, 256);
  EXPECT_EQ(h.pci[2].busid, "0000:3b:00.0");
  EXPECT_EQ(h.pci[2].parent, -1) << "an endpoint not listed hangs under its CPU";
  EXPECT_EQ(h.pci[2].numa, 0);
  EXPECT_EQ(h.pci[3].busid, "0000:12:00.0");
  EXPECT_EQ(h.pci[3].numa, 1);

  ASSERT_EQ(h.gpus.size(), 2u);
  EXPECT_EQ(h.gpus[0].pci_node, 0);
  EXPECT_EQ(h.gpus[0].numa, 1);
  EXPECT_EQ(h.gpus[0].dev, 0);
  ASSERT_EQ(h.gpus[0].nvlinks.size(), 1u);
  EXPECT_EQ(h.gpus[0].nvlinks[0].target, "0000:3b:00.0");
  EXPECT_EQ(h.gpus[0].nvlinks[0].count, 4);
  EXPECT_EQ(h.gpus[1].nvlinks[0].target, "0000:11:00.0");
  EXPECT_EQ(h.gpus[1].pci_node, 2);
  EXPECT_EQ(h.gpus[0].nic, -1) << "AssignNics is the caller's";

  ASSERT_EQ(h.nics.size(), 2u);
  EXPECT_EQ(h.nics[0].pci_node, 3);
  EXPECT_EQ(h.nics[0].link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(h.nics[0].gbps, 400);
  EXPECT_EQ(h.nics[0].port, 1);
  EXPECT_EQ(h.nics[1].pci, "");
  EXPECT_EQ(h.nics[1].pci_node, -1) << "a virtual NIC is not in the tree";
  EXPECT_EQ(h.nics[1].port, 0);
  EXPECT_EQ(h.nics[1].link_layer, LinkLayer::kEthernet);

  std::vector<std::string> facts;
  for (const Host::Provenance& p : h.provenance) {
    EXPECT_EQ(p.source, Source::kJsonSpec) << p.fact;
    facts.push_back(p.fact);
  }
  EXPECT_THAT(facts, ::testing::UnorderedElementsAre("pci", "gpus", "nvlink", "nics"))
      << "no \"nic rates\": veth0 has none";
}

TEST(JsonSpecTest, LikeCopiesTheHardwareUnderItsOwnKey) {
  System s = Parse(kSpec);
  ASSERT_EQ(s.hosts.size(), 2u);
  EXPECT_EQ(s.hosts[1].key, "node1");
  s.hosts[1].key = "node0";
  EXPECT_EQ(Describe(s.hosts[1]), Describe(s.hosts[0]));
}

TEST(JsonSpecTest, DefaultsAndInferredNumaNodes) {
  const System s = Parse(R"({"hosts": [{"key": "a"},
      {"key": "b", "gpus": [{"pci": "0000:81:00.0", "numa": 3}], "nics": [{"name": "eth0", "gbps": 100}]}]})");
  ASSERT_EQ(s.hosts.size(), 2u);
  EXPECT_EQ(s.fabric.kind, Fabric::Kind::kSingleSwitch);
  EXPECT_EQ(s.hosts[0].numa_nodes, 1);
  EXPECT_TRUE(s.hosts[0].provenance.empty()) << "the spec said nothing about a's hardware";
  EXPECT_EQ(s.hosts[1].numa_nodes, 4) << "enough for NUMA node 3";
  EXPECT_EQ(s.hosts[1].gpus[0].numa, 3);
  EXPECT_EQ(s.hosts[1].nics[0].numa, -1);
  bool rates = false;
  for (const Host::Provenance& p : s.hosts[1].provenance) rates |= p.fact == "nic rates";
  EXPECT_TRUE(rates);
}

TEST(JsonSpecTest, ErrorsNameTheFileThePathAndWhatWasExpected) {
  const std::string host0 = R"({"hosts": [{"key": "n0", )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"hosts": [{"key": "n0"}, {"key": "n1", "nics": [{"name": "mlx5_0", "gbps": "fast"}]}]})",
       "hosts[1].nics[0].gbps: expected a number, got a string"},
      {host0 + R"("gpus": [{"pci": "0000:11:00.0", "nvlink": []}]}]})",
       "hosts[0].gpus[0].nvlink: unknown key (expected one of pci, numa, dev, nvlinks, nvlink_gbps)"},
      {R"({"hosts": [{"key": "n0"}], "fabrik": {}})", "fabrik: unknown key (expected one of fabric, hosts)"},
      {R"({"hosts": [{"numa_nodes": 1}]})", "hosts[0].key: missing, expected the host's key (a string)"},
      {R"({"hosts": [{"key": 7}]})", "hosts[0].key: expected a string, got a number"},
      {R"({"hosts": [{"key": "n0"}, {"key": "n0"}]})", "hosts[1].key: \"n0\" is already the key of hosts[0]"},
      {R"({"hosts": []})", "hosts: empty, expected at least one host"},
      {R"({"fabric": {}})", "hosts: missing, expected an array of hosts"},
      {R"([1, 2])", "top level: expected an object, got an array"},
      // Found by tests/fuzz/topology_fuzz: it threw out of the parser.
      {R"({"fabric": {"kind": 1e99999}})", "not valid JSON: number overflow parsing '1e99999'"},
      {R"({"hosts": [{"key": "n0"}], "fabric": {"kind": "fat_tree"}})",
       "fabric.kind: \"fat_tree\", expected single_switch, rail_optimized or two_tier"},
      {R"({"hosts": [{"key": "n0"}], "fabric": {"oversubscription": 0}})",
       "fabric.oversubscription: 0, expected a number > 0"},
      {host0 + R"("numa_nodes": 0}]})", "hosts[0].numa_nodes: 0, expected an integer >= 1"},
      {host0 + R"("numa_nodes": 1.5}]})", "hosts[0].numa_nodes: expected an integer >= 1, got a number"},
      {host0 + R"("numa_nodes": 99999999999}]})", "hosts[0].numa_nodes: 99999999999, expected an integer >= 1"},
      {host0 + R"("gpus": [{"pci": "11:00.0", "dev": -2}]}]})", "hosts[0].gpus[0].dev: -2, expected an integer >= -1"},
      {host0 + R"("gpus": {}}]})", "hosts[0].gpus: expected an array, got an object"},
      {host0 + R"("pci": [{"busid": "gpu0"}]}]})",
       "hosts[0].pci[0].busid: \"gpu0\", expected a PCI bus id like 0000:3b:00.0"},
      {host0 + R"("pci": [{"busid": "10:00.0"}, {"busid": "0000:10:00.0"}]}]})",
       "hosts[0].pci[1].busid: 0000:10:00.0 is already hosts[0].pci[0]"},
      {host0 + R"("pci": [{"busid": "10:00.0", "parent": "20:00.0"}]}]})",
       "hosts[0].pci[0].parent: 0000:20:00.0 is not a bus id listed in hosts[0].pci"},
      {host0 + R"("pci": [{"busid": "10:00.0", "parent": "20:00.0"}, {"busid": "20:00.0", "parent": "10:00.0"}]}]})",
       "hosts[0].pci[0].parent: the parents form a cycle"},
      {host0 + R"("pci": [{"busid": "10:00.0", "switch": 1}]}]})",
       "hosts[0].pci[0].switch: expected true or false, got a number"},
      {host0 + R"("pci": [{"busid": "10:00.0", "numa": 0}, {"busid": "11:00.0", "parent": "10:00.0", "numa": 1}]}]})",
       "hosts[0].pci[1].numa: 1, but its parent 0000:10:00.0 is on NUMA node 0"},
      {host0 + R"("pci": [{"busid": "10:00.0", "numa": 0}], "gpus": [{"pci": "10:00.0", "numa": 1}]}]})",
       "hosts[0].gpus[0].numa: 1, but its PCI node 0000:10:00.0 is on NUMA node 0"},
      {host0 + R"("pci": [{"busid": "10:00.0", "switch": true}], "gpus": [{"pci": "10:00.0"}]}]})",
       "hosts[0].gpus[0].pci: 0000:10:00.0 is a PCIe switch, expected an endpoint"},
      {host0 + R"("gpus": [{"dev": 0}]}]})", "hosts[0].gpus[0].pci: missing, expected the GPU's PCI bus id"},
      {host0 + R"("gpus": [{"pci": "11:00.0"}, {"pci": "0000:11:00.0"}]}]})",
       "hosts[0].gpus[1].pci: 0000:11:00.0 is already hosts[0].gpus[0]"},
      {host0 + R"("gpus": [{"pci": "11:00.0", "nvlinks": [{"target": "nvswitch", "count": 0}]}]}]})",
       "hosts[0].gpus[0].nvlinks[0].count: 0, expected an integer >= 1"},
      {host0 + R"("gpus": [{"pci": "11:00.0"}], "nics": [{"name": "mlx5_0", "pci": "11:00.0"}]}]})",
       "hosts[0].nics[0].pci: 0000:11:00.0 is the bus id of gpus[0]"},
      {host0 + R"("nics": [{"name": "mlx5_0"}, {"name": "mlx5_0"}]}]})",
       "hosts[0].nics[1].name: \"mlx5_0\" port 1 is already hosts[0].nics[0]"},
      {host0 + R"("nics": [{"pci": "12:00.0"}]}]})",
       "hosts[0].nics[0].name: missing, expected the NIC's name (\"mlx5_0\", \"eth0\")"},
      {host0 + R"("nics": [{"name": "mlx5_0", "link_layer": "roce"}]}]})",
       "hosts[0].nics[0].link_layer: \"roce\", expected \"ib\" or \"eth\""},
      {host0 + R"("nics": [{"name": "mlx5_0", "gbps": -1}]}]})", "hosts[0].nics[0].gbps: -1, expected a number >= 0"},
      {R"({"hosts": [{"key": "n0", "like": "n9"}]})", "hosts[0].like: \"n9\" is not the key of any host"},
      {R"({"hosts": [{"key": "n0", "like": "n1"}, {"key": "n1"}]})",
       "hosts[0].like: \"n1\" is hosts[1], not listed before this host (\"like\" copies an earlier one)"},
      {R"({"hosts": [{"key": "n0", "like": "n0"}]})", "hosts[0].like: \"n0\" is this host's own key"},
      {R"({"hosts": [{"key": "n0"}, {"key": "n1", "like": "n0", "gpus": []}]})",
       "hosts[1].gpus: not allowed with \"like\", which copies the hardware"},
  };
  for (const auto& [spec, message] : cases) {
    absl::StatusOr<System> s = ParseJsonSpec(spec, "bed.json");
    ASSERT_FALSE(s.ok()) << spec;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_EQ(s.status().message(), "bed.json: " + message) << spec;
  }
}

TEST(JsonSpecTest, MalformedJsonSaysWhere) {
  absl::StatusOr<System> s = ParseJsonSpec("{\"hosts\": [\n  {\"key\": \"n0\",}\n]}", "bed.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), StartsWith("bed.json: not valid JSON: parse error at line 2, column"));
}

TEST(JsonSpecTest, ASpecRoundTrips) {
  const System first = Parse(kSpec);
  const std::string text = ToJsonSpec(first);
  const System second = Parse(text);
  EXPECT_EQ(Describe(second), Describe(first)) << text;
  EXPECT_EQ(ToJsonSpec(second), text);
}

TEST(JsonSpecTest, BuiltAndXmlHostsRoundTrip) {
  System built;
  built.hosts = {testing::PcieServer("a"), testing::PcieServer("b")};
  built.hosts[1].gpus[3].numa = -1;  // unknown, under a switch whose NUMA node is known
  built.hosts[1].nics[0].pci = "";   // a virtual NIC with a NUMA node
  built.hosts[1].nics[0].pci_node = -1;
  built.fabric.kind = Fabric::Kind::kRailOptimized;
  for (const char* file : {"pcie_8gpu_4nic.xml", "dgx_8gpu_8nic.xml", "cloud_2gpu_2nic.xml"}) {
    absl::StatusOr<System> xml = LoadTopologyFile(absl::StrCat(TRIRACE_TOPO_TEST_DATA, "/", file), file);
    ASSERT_TRUE(xml.ok()) << xml.status();
    built.hosts.push_back(xml->hosts[0]);
  }
  for (Host& h : built.hosts) AssignNics(h);
  const std::string text = ToJsonSpec(built);
  System back = Parse(text);
  for (Host& h : back.hosts) AssignNics(h);
  // Provenance becomes the spec's; everything else is kept.
  EXPECT_EQ(Describe(back, false), Describe(built, false)) << text;
}

// Files in a fresh folder, removed at the end.
class LoadTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing_support::MakeTempDir("trirace-topo-"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (fs::path(dir_) / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(LoadTest, JsonSpecByItsBrace) {
  const absl::StatusOr<System> s = LoadTopologyFile(Write("bed.txt", "\n  " + ReadData("two_hosts_2rail.json")));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->hosts.size(), 2u);
  for (const Host& h : s->hosts) {
    ASSERT_EQ(h.gpus.size(), 2u);
    for (size_t g = 0; g < 2; ++g) {
      ASSERT_GE(h.gpus[g].nic, 0) << "AssignNics ran";
      EXPECT_EQ(h.nics[h.gpus[g].nic].rail, static_cast<int>(g));
    }
  }
}

TEST_F(LoadTest, NcclXmlByItsRootElementKeyedByTheCaller) {
  // A declaration and a comment before <system> (the cloud file starts with one too).
  const std::string path = Write("vm.conf", "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n" + ReadData("cloud_2gpu_2nic.xml"));
  const absl::StatusOr<System> s = LoadTopologyFile(path, "vm7");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->hosts.size(), 1u);
  EXPECT_EQ(s->hosts[0].key, "vm7");
  EXPECT_EQ(s->hosts[0].gpus.size(), 2u);
  EXPECT_EQ(s->hosts[0].provenance.front().source, Source::kNcclXml);
  EXPECT_EQ(s->hosts[0].nics[s->hosts[0].gpus[1].nic].rail, 1) << "AssignNics ran";
  const absl::StatusOr<System> local = LoadTopologyFile(path);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->hosts[0].key, "localhost");
}

TEST_F(LoadTest, ErrorsNameTheFile) {
  const std::string missing = dir_ + "/none.json";
  absl::StatusOr<System> s = LoadTopologyFile(missing);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), missing + ": no such file");

  const std::string hwloc = Write("lstopo.xml",
                                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                                  "<topology version=\"2.0\">\n  <object type=\"Machine\" os_index=\"0\"/>\n</topology>\n");
  s = LoadTopologyFile(hwloc);  // read by hwloc (hwloc_test.cc), which refuses a Machine without CPUs
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), ::testing::StartsWith(hwloc + ": ")) << s.status();

  const std::string accepted =
      "accepted: a TriRace JSON spec (docs/topology.md), an NCCL topology XML (root <system>) or an hwloc XML "
      "export (root <topology>)";
  const std::string other_xml = Write("pom.xml", "<project><name>x</name></project>");
  s = LoadTopologyFile(other_xml);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            other_xml + ": XML with root <project>, not a topology file TriRace reads (" + accepted + ")");

  const std::string yaml = Write("bed.yaml", "hosts:\n  - key: n0\n");
  s = LoadTopologyFile(yaml);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), yaml + ": not a topology file TriRace reads (" + accepted + ")");

  const std::string empty = Write("empty.json", " \n");
  s = LoadTopologyFile(empty);
  EXPECT_EQ(s.status().message(), empty + ": empty file (" + accepted + ")");

  // The parsers' own errors carry the path as their origin.
  const std::string bad_json = Write("bad.json", R"({"hosts": [{"key": "n0", "gpus": 3}]})");
  s = LoadTopologyFile(bad_json);
  EXPECT_EQ(s.status().message(), bad_json + ": hosts[0].gpus: expected an array, got a number");
  const std::string bad_xml = Write("bad.xml", "<system>\n  <cpu/>\n</system>\n");
  s = LoadTopologyFile(bad_xml);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), StartsWith(bad_xml + ":2: "));

  s = LoadTopologyFile(dir_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("a directory"));
}

TEST_F(LoadTest, UnreadableFileIsPermissionDenied) {
  const std::string path = Write("secret.json", R"({"hosts": [{"key": "n0"}]})");
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  if (access(path.c_str(), R_OK) == 0) GTEST_SKIP() << "running as root: every file is readable";
  const absl::StatusOr<System> s = LoadTopologyFile(path);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.status().message(), path + ": permission denied");
}

}  // namespace
}  // namespace trirace::topo
