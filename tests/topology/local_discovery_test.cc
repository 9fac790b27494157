// Discovery of this machine (local.h) and its run-time backends: libibverbs
// and NVML over fake libraries (fake_ibverbs.cc, fake_nvml.cc, loaded by
// path), the merge of every backend on a fake sysfs tree, and this
// machine, where discovery must never fail and says what is missing.
#include "topology/discovery/local.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tests/topology/fake_library.h"
#include "tests/topology/fake_sys.h"
#include "topology/discovery/ibverbs.h"
#include "topology/discovery/nvml.h"
#include "topology/discovery/sysfs.h"

namespace trirace::topo {
namespace {

using testing::FakeSys;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

bool Loadable(const char* library) {
  void* h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

// --- libibverbs ---------------------------------------------------------

using SpeedCode = std::pair<int, double>;  // code, lane Gbit/s
using WidthCode = std::pair<int, int>;     // code, lanes

class LocalDiscoveryIbverbsRateTest : public ::testing::TestWithParam<std::tuple<SpeedCode, WidthCode>> {};

TEST_P(LocalDiscoveryIbverbsRateTest, IsTheLaneRateTimesTheLanes) {
  const auto [speed, width] = GetParam();
  EXPECT_DOUBLE_EQ(IbPortGbps(speed.first, width.first), speed.second * width.second);
}

INSTANTIATE_TEST_SUITE_P(
    SpeedsAndWidths, LocalDiscoveryIbverbsRateTest,
    ::testing::Combine(::testing::Values(SpeedCode{1, 2.5}, SpeedCode{2, 5}, SpeedCode{4, 10}, SpeedCode{8, 10},
                                         SpeedCode{16, 14}, SpeedCode{32, 25}, SpeedCode{64, 50},
                                         SpeedCode{128, 100}, SpeedCode{0, 0}, SpeedCode{3, 0}),
                       ::testing::Values(WidthCode{1, 1}, WidthCode{2, 4}, WidthCode{4, 8}, WidthCode{8, 12},
                                         WidthCode{16, 2}, WidthCode{0, 0})),
    [](const ::testing::TestParamInfo<std::tuple<SpeedCode, WidthCode>>& info) {
      return "Speed" + std::to_string(std::get<0>(info.param).first) + "Width" +
             std::to_string(std::get<1>(info.param).first);
    });

TEST(LocalDiscoveryIbverbsTest, NamesTheWellKnownRatesAndStates) {
  EXPECT_EQ(IbPortGbps(64, 2), 200) << "4X HDR";
  EXPECT_EQ(IbPortGbps(128, 2), 400) << "4X NDR";
  EXPECT_EQ(IbPortGbps(16, 2), 56) << "4X FDR";
  EXPECT_EQ(IbPortGbps(32, 1), 25) << "1X EDR";
  EXPECT_EQ(IbPortStateName(4), "ACTIVE");
  EXPECT_EQ(IbPortStateName(1), "DOWN");
  EXPECT_EQ(IbPortStateName(42), "state 42");
}

#ifdef FAKE_IBVERBS

TEST(LocalDiscoveryIbverbsTest, ReadsEveryPortThroughTheContextOpOrTheExport) {
  const FakeLibrary fake(FAKE_IBVERBS);
  ASSERT_TRUE(fake.ok()) << fake.error();
  fake.SetScenario("fake_ibverbs_set_scenario", 0);
  const IbverbsDiscovery d = DiscoverIbverbs(FAKE_IBVERBS);
  ASSERT_EQ(d.ports.size(), 4u);
  EXPECT_EQ(d.ports[0].device, "mlx5_0");
  EXPECT_EQ(d.ports[0].gbps, 200);
  EXPECT_TRUE(d.ports[0].active);
  EXPECT_EQ(d.ports[0].link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(d.ports[1].device, "mlx5_1") << "a legacy context: the exported ibv_query_port";
  EXPECT_EQ(d.ports[1].gbps, 400);
  EXPECT_EQ(d.ports[2].port, 2);
  EXPECT_FALSE(d.ports[2].active);
  EXPECT_EQ(d.ports[2].state, 1);
  EXPECT_EQ(d.ports[2].gbps, 0);
  EXPECT_EQ(d.ports[3].device, "mlx5_2");
  EXPECT_EQ(d.ports[3].link_layer, LinkLayer::kEthernet) << "RoCE";
  EXPECT_EQ(d.ports[3].gbps, 100);
  EXPECT_THAT(d.notes, ElementsAre("ibverbs: mlx5_3: cannot open the device (Permission denied)"));
  EXPECT_EQ(fake.Count("fake_ibverbs_open"), 0) << "every context closed, the list freed";
}

TEST(LocalDiscoveryIbverbsTest, NoDeviceOrNoKernelSupportIsANote) {
  const FakeLibrary fake(FAKE_IBVERBS);
  ASSERT_TRUE(fake.ok()) << fake.error();
  fake.SetScenario("fake_ibverbs_set_scenario", 1);
  IbverbsDiscovery d = DiscoverIbverbs(FAKE_IBVERBS);
  EXPECT_THAT(d.ports, IsEmpty());
  EXPECT_THAT(d.notes, ElementsAre("ibverbs: no RDMA device"));
  fake.SetScenario("fake_ibverbs_set_scenario", 2);
  d = DiscoverIbverbs(FAKE_IBVERBS);
  EXPECT_THAT(d.ports, IsEmpty());
  EXPECT_THAT(d.notes, ElementsAre("ibverbs: no RDMA device (ibv_get_device_list: Function not implemented)"));
  EXPECT_EQ(fake.Count("fake_ibverbs_open"), 0);
  fake.SetScenario("fake_ibverbs_set_scenario", 0);
}

#endif  // FAKE_IBVERBS

TEST(LocalDiscoveryIbverbsTest, AMissingLibraryOrSymbolIsANote) {
  IbverbsDiscovery d = DiscoverIbverbs("/nonexistent/libibverbs.so.1");
  EXPECT_THAT(d.ports, IsEmpty());
#ifdef FAKE_IBVERBS
  EXPECT_THAT(d.notes, ElementsAre("ibverbs: /nonexistent/libibverbs.so.1 not found"));
  d = DiscoverIbverbs("libc.so.6");
  EXPECT_THAT(d.notes, ElementsAre("ibverbs: libc.so.6 has no ibv_get_device_list"));
#else
  EXPECT_THAT(d.notes, ElementsAre(StartsWith("ibverbs: built without")));
#endif
}

TEST(LocalDiscoveryIbverbsTest, OnThisMachineNeverFailsAndSaysWhyThereIsNoPort) {
  const IbverbsDiscovery d = DiscoverIbverbs();
  if (d.ports.empty()) {
    EXPECT_THAT(d.notes, Contains(StartsWith("ibverbs: ")));
  }
  for (const IbverbsPort& p : d.ports) EXPECT_FALSE(p.device.empty());
}

TEST(LocalDiscoveryIbverbsTest, FillsGapsAndAddsActiveDevicesNobodyListed) {
  Host h;
  h.nics.push_back({.name = "mlx5_0", .pci = "0000:84:00.0"});
  h.nics.push_back({.name = "mlx5_1", .pci = "0000:85:00.0", .port = 2, .gbps = 100});
  h.Note("nics", Source::kSysfs);
  std::vector<IbverbsPort> ports(4);
  ports[0] = {.device = "mlx5_0", .port = 1, .state = 4, .active = true, .gbps = 200,
              .link_layer = LinkLayer::kInfiniBand};
  ports[1] = {.device = "mlx5_1", .port = 1, .state = 4, .active = true, .gbps = 400};
  ports[2] = {.device = "mlx5_1", .port = 2, .state = 4, .active = true, .gbps = 200};
  ports[3] = {.device = "rxe0", .port = 1, .state = 4, .active = true, .gbps = 25,
              .link_layer = LinkLayer::kEthernet};
  AddIbverbsFacts(ports, h);
  ASSERT_THAT(h.nics,
              ElementsAre(Field(&Nic::name, "mlx5_0"), Field(&Nic::name, "mlx5_1"), Field(&Nic::name, "rxe0")))
      << "mlx5_1 port 1: the device is listed with port 2 only";
  EXPECT_EQ(h.nics[0].gbps, 200);
  EXPECT_EQ(h.nics[0].link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(h.nics[1].gbps, 100) << "a known rate is kept";
  EXPECT_EQ(h.nics[2].pci_node, -1);
  EXPECT_EQ(h.nics[2].gbps, 25);
  ASSERT_EQ(h.provenance.size(), 2u);
  EXPECT_EQ(h.provenance[0].source, Source::kSysfs) << "nics: the first backend's";
  EXPECT_EQ(h.provenance[1].fact, "nic rates");
  EXPECT_EQ(h.provenance[1].source, Source::kIbverbs);
}

// --- NVML ---------------------------------------------------------------

TEST(LocalDiscoveryNvmlTest, WithoutTheLibraryItSaysSoAndGivesNothing) {
  const NvmlDiscovery d = DiscoverNvml("/nonexistent/libnvidia-ml.so.1");
  EXPECT_THAT(d.gpus, IsEmpty());
  EXPECT_THAT(d.notes, ElementsAre("NVML: /nonexistent/libnvidia-ml.so.1 not found"));
  if (!Loadable("libnvidia-ml.so.1")) {
    EXPECT_THAT(DiscoverNvml().notes, ElementsAre("NVML: libnvidia-ml.so.1 not found"));
  }
  EXPECT_THAT(DiscoverNvml("libc.so.6").notes, ElementsAre("NVML: libc.so.6 has no nvmlInit_v2"));
}

Gpu::NvLink Link(const std::string& target, int count) { return {target, count}; }

MATCHER_P2(IsLink, target, count, "") { return arg.target == target && arg.count == count; }

TEST(LocalDiscoveryNvmlTest, GivesGpusByBusIdAndTheirActiveNvLinks) {
  const FakeLibrary fake(FAKE_NVML);
  ASSERT_TRUE(fake.ok()) << fake.error();
  for (const int scenario : {0, 1}) {
    SCOPED_TRACE(scenario == 0 ? "remote device types reported" : "remote device types not supported");
    fake.SetScenario("fake_nvml_set_scenario", scenario);
    const NvmlDiscovery d = DiscoverNvml(FAKE_NVML);
    EXPECT_THAT(d.notes, IsEmpty());
    ASSERT_EQ(d.gpus.size(), 4u);
    EXPECT_EQ(d.gpus[0].pci, "0000:07:00.0");
    EXPECT_THAT(d.gpus[0].nvlinks, ElementsAre(IsLink("0000:0f:00.0", 2)));
    EXPECT_THAT(d.gpus[1].nvlinks, ElementsAre(IsLink("0000:07:00.0", 2)));
    EXPECT_THAT(d.gpus[2].nvlinks, ElementsAre(IsLink("nvswitch", 4))) << "both switch chips are one target";
    if (scenario == 0) {
      EXPECT_THAT(d.gpus[3].nvlinks, ElementsAre(IsLink("nvswitch", 3))) << "the CPU link is left out";
      EXPECT_EQ(d.gpus[3].active_links, 3);
    } else {
      EXPECT_THAT(d.gpus[3].nvlinks, ElementsAre(IsLink("nvswitch", 4))) << "no GPU at the far end: a switch";
    }
    EXPECT_EQ(fake.Count("fake_nvml_sessions"), 0) << "nvmlShutdown after nvmlInit_v2";
  }
  fake.SetScenario("fake_nvml_set_scenario", 0);
}

TEST(LocalDiscoveryNvmlTest, AFailingInitOrNoGpuIsANote) {
  const FakeLibrary fake(FAKE_NVML);
  ASSERT_TRUE(fake.ok()) << fake.error();
  fake.SetScenario("fake_nvml_set_scenario", 2);
  NvmlDiscovery d = DiscoverNvml(FAKE_NVML);
  EXPECT_THAT(d.gpus, IsEmpty());
  EXPECT_THAT(d.notes, ElementsAre("NVML: nvmlInit_v2 failed: Driver Not Loaded (9)"));
  fake.SetScenario("fake_nvml_set_scenario", 3);
  d = DiscoverNvml(FAKE_NVML);
  EXPECT_THAT(d.gpus, IsEmpty());
  EXPECT_THAT(d.notes, ElementsAre("NVML: no GPU"));
  EXPECT_EQ(fake.Count("fake_nvml_sessions"), 0);
  fake.SetScenario("fake_nvml_set_scenario", 0);
}

TEST(LocalDiscoveryNvmlTest, KeepsKnownNvLinksAndAddsUnseenGpusOutsideTheTree) {
  Host h;
  h.gpus.resize(2);
  h.gpus[0].pci = "0000:07:00.0";
  h.gpus[1].pci = "0000:0f:00.0";
  h.gpus[1].nvlinks = {Link("nvswitch", 12)};
  std::vector<NvmlGpu> gpus(3);
  gpus[0] = {.pci = "0000:07:00.0", .nvlinks = {Link("0000:0f:00.0", 2)}, .active_links = 2};
  gpus[1] = {.pci = "0000:0f:00.0", .nvlinks = {Link("0000:07:00.0", 2)}, .active_links = 2};
  gpus[2] = {.pci = "0000:47:00.0", .nvlinks = {Link("nvswitch", 4)}, .active_links = 4};
  EXPECT_EQ(AddNvmlFacts(gpus, h), 1);
  ASSERT_EQ(h.gpus.size(), 3u);
  EXPECT_THAT(h.gpus[0].nvlinks, ElementsAre(IsLink("0000:0f:00.0", 2)));
  EXPECT_THAT(h.gpus[1].nvlinks, ElementsAre(IsLink("nvswitch", 12))) << "an earlier backend's links are kept";
  EXPECT_EQ(h.gpus[2].pci_node, -1);
  EXPECT_EQ(h.gpus[2].numa, -1);
  std::vector<std::string> sources;
  for (const Host::Provenance& p : h.provenance) sources.push_back(p.fact + ": " + std::string(SourceName(p.source)));
  EXPECT_THAT(sources, ElementsAre("nvlink: nvml", "gpus: nvml"));
}

// --- the merge ----------------------------------------------------------

TEST(LocalDiscoveryTest, AFakeMachineMergesSysfsIbverbsAndNvml) {
#ifndef FAKE_IBVERBS
  GTEST_SKIP() << "built without the libibverbs headers: no fake libibverbs";
#else
  FakeSys sys;
  sys.NumaNodes(1);
  sys.Bridge("0000:00:01.0", 0);
  sys.Bridge("0000:00:01.0/0000:01:00.0", 0);
  sys.Bridge("0000:00:01.0/0000:01:00.0/0000:02:00.0", 0);
  sys.Bridge("0000:00:01.0/0000:01:00.0/0000:02:01.0", 0);
  sys.Bridge("0000:00:01.0/0000:01:00.0/0000:02:02.0", 0);
  sys.Pci("0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:07:00.0", {.cls = "0x030200", .vendor = "0x10de", .numa = 0});
  sys.Pci("0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:0f:00.0", {.cls = "0x030200", .vendor = "0x10de", .numa = 0});
  const std::string hca = sys.Pci("0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0", {.cls = "0x020700"});
  sys.RdmaPort("mlx5_0", hca, 1, "unreadable", "4: ACTIVE", "InfiniBand");
  const std::string eth = sys.Pci("0000:00:03.0", {.numa = 0});
  sys.Netdev("eth0", eth, "-1");
  const FakeLibrary ibverbs(FAKE_IBVERBS), nvml(FAKE_NVML);
  ASSERT_TRUE(ibverbs.ok() && nvml.ok()) << ibverbs.error() << nvml.error();
  ibverbs.SetScenario("fake_ibverbs_set_scenario", 0);
  nvml.SetScenario("fake_nvml_set_scenario", 0);

  const LocalDiscovery d = DiscoverLocalHost(
      {.sysfs_root = sys.root(), .use_hwloc = false, .ibverbs_library = FAKE_IBVERBS, .nvml_library = FAKE_NVML});
  const Host& h = d.host;
  EXPECT_TRUE(h.key.empty());
  ASSERT_THAT(h.nics, ElementsAre(Field(&Nic::name, "mlx5_0"), Field(&Nic::name, "eth0"), Field(&Nic::name, "mlx5_1"),
                                  Field(&Nic::name, "mlx5_2")));
  EXPECT_EQ(h.nics[0].gbps, 200) << "sysfs's rate did not read; ibverbs's did";
  EXPECT_EQ(h.nics[0].pci, "0000:05:00.0");
  EXPECT_EQ(h.nics[1].gbps, 0) << "no speed anywhere: unknown";
  EXPECT_EQ(h.nics[2].pci_node, -1) << "known to ibverbs only";
  EXPECT_EQ(h.nics[3].link_layer, LinkLayer::kEthernet);
  ASSERT_EQ(h.gpus.size(), 4u);
  EXPECT_GE(h.gpus[0].pci_node, 0);
  EXPECT_THAT(h.gpus[0].nvlinks, ElementsAre(IsLink("0000:0f:00.0", 2)));
  EXPECT_EQ(h.gpus[2].pci, "0000:47:00.0");
  EXPECT_EQ(h.gpus[2].pci_node, -1) << "known to NVML only";
  EXPECT_EQ(h.nics[h.gpus[0].nic].name, "mlx5_0") << "AssignNics ran: the HCA under the GPU's switch";
  for (const Nic& n : h.nics) EXPECT_GE(n.rail, 0) << n.name;
  std::vector<std::string> sources;
  for (const Host::Provenance& p : h.provenance) sources.push_back(p.fact + ": " + std::string(SourceName(p.source)));
  EXPECT_THAT(sources, ElementsAre("gpus: sysfs", "nics: sysfs", "pci: sysfs", "nic rates: ibverbs", "nvlink: nvml"))
      << "GPUs were first seen by sysfs; their NVLinks come from NVML";
  EXPECT_THAT(d.notes, ElementsAre("ibverbs: mlx5_3: cannot open the device (Permission denied)",
                                   "NVML: 4 GPU(s) (2 not seen by hwloc or sysfs), 11 active NVLink(s)"))
      << "mlx5_1 port 2 (DOWN) is no NIC: no note about it";
#endif
}

TEST(LocalDiscoveryTest, AnEmptyMachineSaysWhatIsMissing) {
  const LocalDiscovery d = DiscoverLocalHost({.sysfs_root = "/nonexistent",
                                              .use_hwloc = false,
                                              .ibverbs_library = "/nonexistent/libibverbs.so.1",
                                              .nvml_library = "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_THAT(d.host.nics, IsEmpty());
  EXPECT_THAT(d.host.gpus, IsEmpty());
  EXPECT_THAT(d.notes, Contains("no GPU found"));
  EXPECT_THAT(d.notes, Contains("no InfiniBand device"));
  EXPECT_THAT(d.notes, Contains("no NIC with a PCI device found"));
  EXPECT_THAT(d.notes, Contains("NVML: /nonexistent/libnvidia-ml.so.1 not found"));
}

TEST(LocalDiscoveryTest, ThisMachineAlwaysGivesAHostAndSaysWhatIsMissing) {
  const LocalDiscovery d = DiscoverLocalHost();
  for (const Nic& n : d.host.nics) EXPECT_GE(n.rail, 0) << n.name << ": AssignNics ran";
  if (d.host.gpus.empty()) {
    EXPECT_THAT(d.notes, Contains("no GPU found"));
  }
  if (d.host.nics.empty()) {
    EXPECT_THAT(d.notes, Contains("no NIC with a PCI device found"));
  }
  if (!Loadable("libnvidia-ml.so.1")) {
    EXPECT_THAT(d.notes, Contains("NVML: libnvidia-ml.so.1 not found"));
  }
  for (const std::string& note : d.notes) EXPECT_THAT(note, AllOf(Not(IsEmpty()), Not(HasSubstr("\n"))));
}

}  // namespace
}  // namespace trirace::topo
