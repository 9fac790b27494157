// sysfs discovery over fake sysfs trees built here (fake_sys.h): an
// Ethernet-only VM, an InfiniBand server with a PCIe switch, RoCE, odd and
// missing entries, and the merge with what an earlier backend gave.
#include "topology/discovery/sysfs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tests/topology/fake_sys.h"
#include "topology/affinity.h"

namespace trirace::topo {
namespace {

namespace fs = std::filesystem;
using testing::FakeSys;
using ::testing::ElementsAre;
using ::testing::Field;

Source SourceOf(const Host& h, const std::string& fact) {
  for (const Host::Provenance& p : h.provenance) {
    if (p.fact == fact) return p.source;
  }
  return Source::kUnknown;
}

std::vector<std::string> Names(const std::vector<SysfsNic>& nics) {
  std::vector<std::string> out;
  for (const SysfsNic& n : nics) out.push_back(n.name + "/" + std::to_string(n.port));
  return out;
}

// eth0 on a virtio device under PCI function 00:03.0 (NUMA node 0), lo,
// and docker0, a bridge without a device.
void BuildEthernetVm(const FakeSys& sys) {
  const std::string fn = sys.Pci("0000:00:03.0", {.vendor = "0x1af4", .numa = 0, .speed = "Unknown", .width = "0"});
  sys.Write(fn + "/virtio2/device", "0x0001");
  sys.Netdev("eth0", fn + "/virtio2", "25000");
  sys.Netdev("lo", "", "-1", 772, "unknown");
  sys.Netdev("docker0", "", "-1", 1, "down");
  sys.NumaNodes(1);
}

TEST(SysfsTest, AnEthernetVmHasOneNicAndNoRdmaOrGpu) {
  FakeSys sys;
  BuildEthernetVm(sys);
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  ASSERT_THAT(Names(nics), ElementsAre("docker0/1", "eth0/1", "lo/1"));
  const SysfsNic& eth = nics[1];
  EXPECT_EQ(eth.pci, "0000:00:03.0") << "the PCI function above the virtio device";
  EXPECT_EQ(eth.numa, 0);
  EXPECT_EQ(eth.gbps, 25);
  EXPECT_EQ(eth.link_layer, LinkLayer::kEthernet);
  EXPECT_TRUE(eth.up);
  EXPECT_FALSE(eth.rdma);
  EXPECT_FALSE(eth.is_virtual);
  EXPECT_TRUE(nics[0].is_virtual);
  EXPECT_FALSE(nics[0].up);
  EXPECT_TRUE(nics[2].is_virtual);
  EXPECT_EQ(nics[2].link_layer, LinkLayer::kUnknown) << "loopback";
  EXPECT_FALSE(HasActiveRdmaPort(sys.root()));

  Host h;
  AddSysfsFacts(sys.root(), h);
  ASSERT_EQ(h.nics.size(), 1u) << "virtual interfaces are not NICs";
  EXPECT_EQ(h.nics[0].name, "eth0");
  EXPECT_EQ(h.nics[0].gbps, 25);
  EXPECT_EQ(h.nics[0].numa, 0);
  ASSERT_GE(h.nics[0].pci_node, 0);
  EXPECT_EQ(h.pci[h.nics[0].pci_node].parent, -1) << "on the root bus";
  EXPECT_EQ(h.pci[h.nics[0].pci_node].link_gbps, 0) << "virtio has no PCIe link speed";
  EXPECT_TRUE(h.gpus.empty());
  EXPECT_EQ(h.numa_nodes, 1);
  EXPECT_EQ(SourceOf(h, "nics"), Source::kSysfs);
  EXPECT_EQ(SourceOf(h, "nic rates"), Source::kSysfs);
  EXPECT_EQ(SourceOf(h, "pci"), Source::kSysfs);
  EXPECT_EQ(SourceOf(h, "gpus"), Source::kUnknown);
}

// NUMA node 1: root port 80:01.0 -> PCIe switch (upstream 81:00.0,
// downstream 82:0x.0) -> a GPU and two HCAs; mlx5_1's second port is DOWN;
// ib0 is mlx5_0's IPoIB netdev.
void BuildIbServer(const FakeSys& sys) {
  sys.NumaNodes(2);
  sys.Bridge("0000:80:01.0", 1);
  sys.Bridge("0000:80:01.0/0000:81:00.0", 1);
  for (const char* down : {"0000:82:00.0", "0000:82:01.0", "0000:82:02.0"}) {
    sys.Bridge(std::string("0000:80:01.0/0000:81:00.0/") + down, 1);
  }
  sys.Pci("0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0", {.cls = "0x030200", .vendor = "0x10de", .numa = 1});
  const std::string hca0 =
      sys.Pci("0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:84:00.0", {.cls = "0x020700", .numa = 1});
  const std::string hca1 = sys.Pci("0000:80:01.0/0000:81:00.0/0000:82:02.0/0000:85:00.0",
                                   {.cls = "0x020700", .numa = 1, .speed = "8.0 GT/s PCIe", .width = "8"});
  sys.RdmaPort("mlx5_0", hca0, 1, "200 Gb/sec (4X HDR)", "4: ACTIVE", "InfiniBand");
  sys.RdmaPort("mlx5_1", hca1, 1, "400 Gb/sec (4X NDR)", "4: ACTIVE", "InfiniBand");
  sys.RdmaPort("mlx5_1", hca1, 2, "100 Gb/sec (4X EDR)", "1: DOWN", "InfiniBand");
  sys.Netdev("ib0", hca0, "200000", 32);
}

TEST(SysfsTest, AnInfinibandServerGivesRatesNumaAndThePcieTreeAboveGpusAndNics) {
  FakeSys sys;
  BuildIbServer(sys);
  EXPECT_TRUE(HasActiveRdmaPort(sys.root()));
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  ASSERT_THAT(Names(nics), ElementsAre("mlx5_0/1", "mlx5_1/1", "mlx5_1/2")) << "ib0 is mlx5_0's netdev";
  EXPECT_EQ(nics[0].gbps, 200);
  EXPECT_EQ(nics[0].netdev, "ib0");
  EXPECT_EQ(nics[0].numa, 1);
  EXPECT_EQ(nics[1].gbps, 400);
  EXPECT_TRUE(nics[1].up);
  EXPECT_FALSE(nics[2].up);
  EXPECT_EQ(nics[2].link_layer, LinkLayer::kInfiniBand);

  Host h;
  AddSysfsFacts(sys.root(), h);
  EXPECT_EQ(h.numa_nodes, 2);
  ASSERT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.gpus[0].pci, "0000:83:00.0");
  EXPECT_EQ(h.gpus[0].numa, 1);
  ASSERT_THAT(h.nics, ElementsAre(Field(&Nic::name, "mlx5_0"), Field(&Nic::name, "mlx5_1")))
      << "active ports only: mlx5_1 port 2 is DOWN";
  EXPECT_EQ(h.nics[1].gbps, 400);
  EXPECT_EQ(h.nics[1].link_layer, LinkLayer::kInfiniBand);
  const int sw = h.FindPci("0000:81:00.0");
  ASSERT_GE(sw, 0);
  EXPECT_TRUE(h.pci[sw].is_switch);
  EXPECT_EQ(h.pci[sw].parent, -1);
  EXPECT_EQ(h.pci[sw].numa, 1);
  EXPECT_EQ(h.pci[h.gpus[0].pci_node].parent, sw) << "root and downstream ports are not nodes";
  EXPECT_EQ(h.FindPci("0000:80:01.0"), -1);
  EXPECT_EQ(h.FindPci("0000:82:00.0"), -1);
  EXPECT_NEAR(h.pci[h.FindPci("0000:85:00.0")].link_gbps, 8 * 8 * 128.0 / 130.0, 1e-9);
  EXPECT_NEAR(h.pci[sw].link_gbps, 16 * 16 * 128.0 / 130.0, 1e-9);
  AssignNics(h);
  EXPECT_EQ(h.nics[h.gpus[0].nic].name, "mlx5_0") << "under the GPU's switch, the lowest rail";
  EXPECT_EQ(PciPathType(h, h.gpus[0].pci_node, h.gpus[0].numa, h.nics[0].pci_node, h.nics[0].numa), PathType::kPix);
  EXPECT_EQ(SourceOf(h, "gpus"), Source::kSysfs);
}

TEST(SysfsTest, RoceNamesItsNetdevAndKeepsItOutOfTheEthernetList) {
  FakeSys sys;
  const std::string f0 = sys.Pci("0000:17:00.0", {.numa = 0});
  const std::string f1 = sys.Pci("0000:17:00.1", {.numa = 0});
  sys.RdmaPort("mlx5_0", f0, 1, "100 Gb/sec (4X EDR)", "4: ACTIVE", "Ethernet");
  sys.Write("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens1f0np0");
  sys.RdmaPort("mlx5_1", f1, 1, "25 Gb/sec (1X EDR)", "4: ACTIVE", "Ethernet");
  sys.Netdev("ens1f0np0", f0, "100000");
  sys.Netdev("ens1f1np1", f1, "25000");
  sys.Write(f1 + "/net/ens1f1np1/dev_port", "0");
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  ASSERT_THAT(Names(nics), ElementsAre("mlx5_0/1", "mlx5_1/1")) << "an RDMA port's netdev is the same NIC";
  EXPECT_EQ(nics[0].netdev, "ens1f0np0") << "from gid_attrs/ndevs";
  EXPECT_EQ(nics[1].netdev, "ens1f1np1") << "from dev_port under the PCI function";
  EXPECT_EQ(nics[0].link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(nics[1].gbps, 25);
  EXPECT_TRUE(HasActiveRdmaPort(sys.root()));
}

TEST(SysfsTest, ARdmaDeviceWithoutAnActivePortIsListedByItsFirstPort) {
  FakeSys sys;
  const std::string fn = sys.Pci("0000:21:00.0", {.cls = "0x020700", .numa = 0});
  sys.RdmaPort("mlx5_4", fn, 2, "100 Gb/sec (4X EDR)", "1: DOWN", "InfiniBand");
  sys.RdmaPort("mlx5_4", fn, 1, "100 Gb/sec (4X EDR)", "2: INIT", "InfiniBand");
  Host h;
  AddSysfsFacts(sys.root(), h);
  ASSERT_EQ(h.nics.size(), 1u);
  EXPECT_EQ(h.nics[0].port, 1);
  EXPECT_FALSE(HasActiveRdmaPort(sys.root()));
}

TEST(SysfsTest, AnEarlierBackendsFactsAreKeptAndOnlyGapsAreFilled) {
  FakeSys sys;
  BuildIbServer(sys);
  // What hwloc would have given: the switch and mlx5_0 without rates, and
  // mlx5_1 known by its bus id only (no driver seen).
  Host h;
  h.numa_nodes = 2;
  h.pci.push_back({"0000:81:00.0", -1, 1, true, 0});
  h.pci.push_back({"0000:84:00.0", 0, 1, false, 0});
  h.nics.push_back({.name = "mlx5_0", .pci = "0000:84:00.0", .pci_node = 1, .numa = 1});
  h.nics.push_back({.name = "0000:85:00.0", .pci = "0000:85:00.0", .numa = -1});
  h.Note("pci", Source::kHwloc);
  h.Note("nics", Source::kHwloc);
  AddSysfsFacts(sys.root(), h);
  ASSERT_EQ(h.nics.size(), 2u) << "nothing listed twice";
  EXPECT_EQ(h.nics[0].gbps, 200);
  EXPECT_EQ(h.nics[0].link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(h.nics[1].name, "0000:85:00.0") << "the earlier name is kept";
  EXPECT_EQ(h.nics[1].gbps, 400);
  EXPECT_EQ(h.nics[1].numa, 1);
  EXPECT_GT(h.pci[0].link_gbps, 0) << "a link rate hwloc lacked";
  EXPECT_EQ(SourceOf(h, "nics"), Source::kHwloc);
  EXPECT_EQ(SourceOf(h, "pci"), Source::kHwloc);
  EXPECT_EQ(SourceOf(h, "nic rates"), Source::kSysfs);
  EXPECT_EQ(SourceOf(h, "gpus"), Source::kSysfs);

  Host other_port;
  other_port.nics.emplace_back();
  other_port.nics[0].name = "mlx5_1";
  other_port.nics[0].port = 2;
  AddSysfsFacts(sys.root(), other_port);
  int mlx5_1 = 0;
  for (const Nic& n : other_port.nics) mlx5_1 += n.name == "mlx5_1";
  EXPECT_EQ(mlx5_1, 1) << "a device listed with other ports gets no new port";
}

TEST(SysfsTest, NoTreeGivesNothing) {
  EXPECT_TRUE(ListSysfsNics("/nonexistent").empty());
  EXPECT_FALSE(HasActiveRdmaPort("/nonexistent"));
  Host h;
  AddSysfsFacts("/nonexistent", h);
  EXPECT_TRUE(h.nics.empty());
  EXPECT_TRUE(h.gpus.empty());
  EXPECT_TRUE(h.pci.empty());
  EXPECT_TRUE(h.provenance.empty());
  EXPECT_EQ(h.numa_nodes, 1);
}

// One odd or missing entry in an otherwise good machine (an IB server
// with eth0 beside it): discovery goes on, the field is unknown.
struct Oddity {
  const char* name;
  std::function<void(const FakeSys&)> spoil;
  std::function<void(const std::vector<SysfsNic>&, const Host&)> check;
};

const SysfsNic* Find(const std::vector<SysfsNic>& nics, const std::string& name) {
  for (const SysfsNic& n : nics) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

class SysfsOddEntryTest : public ::testing::TestWithParam<Oddity> {};

TEST_P(SysfsOddEntryTest, LeavesTheFieldUnknownAndNeverFails) {
  FakeSys sys;
  BuildIbServer(sys);
  const std::string eth = sys.Pci("0000:00:05.0", {.numa = 0});
  sys.Netdev("eth1", eth, "10000");
  GetParam().spoil(sys);
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  Host h;
  AddSysfsFacts(sys.root(), h);
  GetParam().check(nics, h);
}

const Oddity kOddities[] = {
    {"SpeedMinusOne", [](const FakeSys& s) { s.Write("class/net/eth1/speed", "-1"); },
     [](const auto& nics, const Host&) { EXPECT_EQ(Find(nics, "eth1")->gbps, 0); }},
    {"SpeedGarbage", [](const FakeSys& s) { s.Write("class/net/eth1/speed", "fast"); },
     [](const auto& nics, const Host&) { EXPECT_EQ(Find(nics, "eth1")->gbps, 0); }},
    {"RateUnreadable",
     [](const FakeSys& s) {
       fs::remove(s.root() + "/class/infiniband/mlx5_0/ports/1/rate");
       fs::create_directories(s.root() + "/class/infiniband/mlx5_0/ports/1/rate");
     },
     [](const auto& nics, const Host& h) {
       EXPECT_EQ(Find(nics, "mlx5_0")->gbps, 0);
       EXPECT_EQ(h.nics[h.FindNic("mlx5_0")].gbps, 0);
       EXPECT_TRUE(Find(nics, "mlx5_0")->up);
     }},
    {"RateGarbage", [](const FakeSys& s) { s.Write("class/infiniband/mlx5_0/ports/1/rate", "fast (4X HDR)"); },
     [](const auto& nics, const Host&) { EXPECT_EQ(Find(nics, "mlx5_0")->gbps, 0); }},
    {"NumaMissing", [](const FakeSys& s) { fs::remove(s.root() + "/devices/pci0000:00/0000:00:05.0/numa_node"); },
     [](const auto& nics, const Host& h) {
       EXPECT_EQ(Find(nics, "eth1")->numa, -1);
       EXPECT_EQ(h.nics[h.FindNic("eth1")].numa, -1) << "two NUMA nodes: unknown";
     }},
    {"NumaMinusOne", [](const FakeSys& s) { s.Write("devices/pci0000:00/0000:00:05.0/numa_node", "-1"); },
     [](const auto& nics, const Host&) { EXPECT_EQ(Find(nics, "eth1")->numa, -1); }},
    {"StateGarbage", [](const FakeSys& s) { s.Write("class/infiniband/mlx5_1/ports/1/state", "sideways"); },
     [](const auto& nics, const Host&) {
       EXPECT_FALSE(Find(nics, "mlx5_1")->up);
       EXPECT_TRUE(Find(nics, "mlx5_0")->up);
     }},
    {"LinkLayerGarbage", [](const FakeSys& s) { s.Write("class/infiniband/mlx5_0/ports/1/link_layer", "Martian"); },
     [](const auto& nics, const Host&) { EXPECT_EQ(Find(nics, "mlx5_0")->link_layer, LinkLayer::kUnknown); }},
    {"TypeGarbage", [](const FakeSys& s) { s.Write("class/net/eth1/type", "x"); },
     [](const auto& nics, const Host&) { EXPECT_EQ(Find(nics, "eth1")->link_layer, LinkLayer::kUnknown); }},
    {"PortNotANumber", [](const FakeSys& s) { s.Write("class/infiniband/mlx5_0/ports/first/rate", "1 Gb/sec"); },
     [](const auto& nics, const Host&) { EXPECT_EQ(nics.size(), 4u); }},
    {"LinkSpeedUnknown",
     [](const FakeSys& s) { s.Write("devices/pci0000:00/0000:80:01.0/0000:81:00.0/current_link_speed", "Unknown"); },
     [](const auto&, const Host& h) { EXPECT_EQ(h.pci[h.FindPci("0000:81:00.0")].link_gbps, 0); }},
    {"DanglingDeviceLink",
     [](const FakeSys& s) {
       fs::remove(s.root() + "/class/net/eth1/device");
       fs::create_symlink(s.root() + "/devices/gone", s.root() + "/class/net/eth1/device");
     },
     [](const auto& nics, const Host& h) {
       EXPECT_TRUE(Find(nics, "eth1")->is_virtual);
       EXPECT_EQ(h.FindNic("eth1"), -1);
     }},
    {"GpuClassGarbage",
     [](const FakeSys& s) {
       s.Write("devices/pci0000:00/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0/class", "?");
     },
     [](const auto&, const Host& h) { EXPECT_TRUE(h.gpus.empty()); }},
    {"NoNodeFolder", [](const FakeSys& s) { fs::remove_all(s.root() + "/devices/system"); },
     [](const auto&, const Host& h) { EXPECT_EQ(h.numa_nodes, 2) << "the highest NUMA node seen"; }},
};

INSTANTIATE_TEST_SUITE_P(Oddities, SysfsOddEntryTest, ::testing::ValuesIn(kOddities),
                         [](const ::testing::TestParamInfo<Oddity>& info) { return std::string(info.param.name); });

class SysfsRateTest : public ::testing::TestWithParam<std::pair<const char*, double>> {};

TEST_P(SysfsRateTest, ReadsTheGbitPerSecondOfARateString) {
  EXPECT_EQ(IbRateGbps(GetParam().first), GetParam().second) << GetParam().first;
}

INSTANTIATE_TEST_SUITE_P(Rates, SysfsRateTest,
                         ::testing::Values(std::pair<const char*, double>{"200 Gb/sec (4X HDR)", 200},
                                           std::pair<const char*, double>{"100 Gb/sec (4X EDR)", 100},
                                           std::pair<const char*, double>{"25 Gb/sec (1X EDR)", 25},
                                           std::pair<const char*, double>{"56 Gb/sec (4X FDR)", 56},
                                           std::pair<const char*, double>{"2.5 Gb/sec (1X SDR)", 2.5},
                                           std::pair<const char*, double>{"400 Gb/sec (4X NDR)", 400},
                                           std::pair<const char*, double>{"fast", 0},
                                           std::pair<const char*, double>{"", 0},
                                           std::pair<const char*, double>{"-5 Gb/sec", 0},
                                           std::pair<const char*, double>{"200 Mb/sec", 0}),
                         [](const ::testing::TestParamInfo<std::pair<const char*, double>>& info) {
                           std::string name = "Rate" + std::to_string(info.index) + "_";
                           for (const char* c = info.param.first; *c != 0; ++c) {
                             if (std::isalnum(static_cast<unsigned char>(*c))) name += *c;
                           }
                           return name;
                         });

}  // namespace
}  // namespace trirace::topo
