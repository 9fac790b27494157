// sysfs discovery over fake sysfs trees built here: an Ethernet-only VM, an
// InfiniBand server with a PCIe switch, RoCE, odd and missing entries; and
// discovery of this machine, which never fails.
#include "topology/discovery/sysfs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/subprocess.h"
#include "topology/affinity.h"
#include "topology/discovery/local.h"

namespace trirace::topo {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;

// A fake /sys: PCI functions under devices/, linked from bus/pci/devices,
// netdevs under class/net and RDMA devices under class/infiniband.
class FakeSys {
 public:
  FakeSys() : root_(testing_support::MakeTempDir("trirace-fake-sys-")) {}
  ~FakeSys() { fs::remove_all(root_); }
  const std::string& root() const { return root_; }

  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text << "\n";
  }
  // A PCI function at `chain` ("0000:00:01.0/0000:02:00.0"), with its attributes.
  std::string Pci(const std::string& chain, int numa, const std::string& cls, const std::string& vendor = "0x15b3",
                  const std::string& speed = "16.0 GT/s PCIe", const std::string& width = "16") {
    const std::string dir = "devices/pci0000:00/" + chain;
    const std::string busid = fs::path(chain).filename().string();
    Write(dir + "/numa_node", std::to_string(numa));
    Write(dir + "/class", cls);
    Write(dir + "/vendor", vendor);
    Write(dir + "/current_link_speed", speed);
    Write(dir + "/current_link_width", width);
    fs::create_directories(root_ + "/bus/pci/devices");
    fs::create_symlink(root_ + "/" + dir, root_ + "/bus/pci/devices/" + busid);
    return dir;
  }
  void Netdev(const std::string& name, const std::string& device_dir, const std::string& speed, int type = 1,
              const std::string& state = "up") {
    Write("class/net/" + name + "/speed", speed);
    Write("class/net/" + name + "/type", std::to_string(type));
    Write("class/net/" + name + "/operstate", state);
    if (!device_dir.empty()) fs::create_symlink(root_ + "/" + device_dir, root_ + "/class/net/" + name + "/device");
  }
  void Rdma(const std::string& dev, const std::string& device_dir, int port, const std::string& rate,
            const std::string& state, const std::string& layer) {
    const std::string p = "class/infiniband/" + dev + "/ports/" + std::to_string(port);
    Write(p + "/rate", rate);
    Write(p + "/state", state);
    Write(p + "/link_layer", layer);
    if (!fs::exists(root_ + "/class/infiniband/" + dev + "/device")) {
      fs::create_symlink(root_ + "/" + device_dir, root_ + "/class/infiniband/" + dev + "/device");
    }
  }

 private:
  std::string root_;
};

TEST(SysfsTest, AnEthernetVmHasOneNicAndNoRdma) {
  FakeSys sys;
  const std::string eth = sys.Pci("0000:00:03.0", 0, "0x020000", "0x1af4");
  sys.Netdev("eth0", eth, "25000");
  sys.Netdev("lo", "", "-1", 772, "unknown");
  sys.Netdev("docker0", "", "-1", 1, "down");
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  ASSERT_EQ(nics.size(), 3u);
  EXPECT_EQ(nics[1].name, "eth0");
  EXPECT_EQ(nics[1].pci, "0000:00:03.0");
  EXPECT_EQ(nics[1].numa, 0);
  EXPECT_EQ(nics[1].gbps, 25);
  EXPECT_EQ(nics[1].link_layer, LinkLayer::kEthernet);
  EXPECT_TRUE(nics[1].up);
  EXPECT_FALSE(nics[1].is_virtual);
  EXPECT_TRUE(nics[0].is_virtual) << nics[0].name;  // docker0
  EXPECT_TRUE(nics[2].is_virtual) << nics[2].name;  // lo
  EXPECT_FALSE(HasActiveRdmaPort(sys.root()));

  Host h;
  AddSysfsFacts(sys.root(), h);
  ASSERT_EQ(h.nics.size(), 1u) << "virtual interfaces are not NICs";
  EXPECT_EQ(h.nics[0].name, "eth0");
  EXPECT_EQ(h.nics[0].gbps, 25);
  EXPECT_TRUE(h.gpus.empty());
}

TEST(SysfsTest, AnInfinibandServerGivesRatesNumaAndThePcieTreeAboveGpusAndNics) {
  FakeSys sys;
  // Root port 80:01.0 -> switch (upstream port 81:00.0, downstream ports 82:0x.0) -> GPU and two HCAs.
  sys.Pci("0000:80:01.0", 1, "0x060400", "0x8086");
  sys.Pci("0000:80:01.0/0000:81:00.0", 1, "0x060400", "0x1000");
  for (const char* down : {"0000:82:00.0", "0000:82:01.0", "0000:82:02.0"}) {
    sys.Pci(std::string("0000:80:01.0/0000:81:00.0/") + down, 1, "0x060400", "0x1000");
  }
  sys.Pci("0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0", 1, "0x030200", "0x10de");
  const std::string hca0 = sys.Pci("0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:84:00.0", 1, "0x020700");
  const std::string hca1 = sys.Pci("0000:80:01.0/0000:81:00.0/0000:82:02.0/0000:85:00.0", 1, "0x020700", "0x15b3",
                                   "8.0 GT/s PCIe", "8");
  sys.Rdma("mlx5_0", hca0, 1, "200 Gb/sec (4X HDR)", "4: ACTIVE", "InfiniBand");
  sys.Rdma("mlx5_1", hca1, 1, "400 Gb/sec (4X NDR)", "4: ACTIVE", "InfiniBand");
  sys.Rdma("mlx5_1", hca1, 2, "100 Gb/sec (4X EDR)", "1: DOWN", "InfiniBand");
  EXPECT_TRUE(HasActiveRdmaPort(sys.root()));
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  ASSERT_EQ(nics.size(), 3u);
  EXPECT_EQ(nics[0].gbps, 200);
  EXPECT_EQ(nics[1].gbps, 400);
  EXPECT_EQ(nics[2].port, 2);
  EXPECT_FALSE(nics[2].up);
  EXPECT_EQ(nics[0].numa, 1);

  Host h;
  AddSysfsFacts(sys.root(), h);
  ASSERT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.gpus[0].pci, "0000:83:00.0");
  EXPECT_EQ(h.gpus[0].numa, 1);
  EXPECT_EQ(h.numa_nodes, 2);
  const int sw = h.FindPci("0000:81:00.0");
  ASSERT_GE(sw, 0);
  EXPECT_TRUE(h.pci[sw].is_switch);
  EXPECT_EQ(h.pci[h.gpus[0].pci_node].parent, sw) << "root and downstream ports are not nodes";
  EXPECT_EQ(h.FindPci("0000:80:01.0"), -1);
  EXPECT_EQ(h.FindPci("0000:82:00.0"), -1);
  EXPECT_NEAR(h.pci[h.FindPci("0000:85:00.0")].link_gbps, 8 * 8 * 128.0 / 130.0, 1e-9);
  AssignNics(h);
  EXPECT_EQ(h.gpus[0].nic, 0) << "the HCA under the GPU's switch";
  EXPECT_EQ(PciPathType(h, h.gpus[0].pci_node, h.gpus[0].numa, h.nics[0].pci_node, h.nics[0].numa), PathType::kPix);
  ASSERT_EQ(h.nics.size(), 2u) << "one NIC per RDMA device (its first port)";
  EXPECT_EQ(h.nics[1].gbps, 400);
  EXPECT_EQ(h.nics[1].link_layer, LinkLayer::kInfiniBand);
}

TEST(SysfsTest, RoceKeepsItsNetdevOutOfTheEthernetList) {
  FakeSys sys;
  const std::string nic = sys.Pci("0000:17:00.0", 0, "0x020000");
  sys.Rdma("mlx5_0", nic, 1, "100 Gb/sec (4X EDR)", "4: ACTIVE", "Ethernet");
  sys.Netdev("ens1f0", nic, "100000");
  sys.Write("devices/pci0000:00/0000:17:00.0/net/ens1f0/ifindex", "3");
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  ASSERT_EQ(nics.size(), 1u) << "the RDMA port's netdev is the same NIC";
  EXPECT_EQ(nics[0].name, "mlx5_0");
  EXPECT_EQ(nics[0].netdev, "ens1f0");
  EXPECT_EQ(nics[0].link_layer, LinkLayer::kEthernet);
  EXPECT_TRUE(HasActiveRdmaPort(sys.root()));
}

TEST(SysfsTest, OddAndMissingEntriesLeaveFieldsUnknown) {
  FakeSys sys;
  const std::string eth = sys.Pci("0000:00:05.0", -1, "garbage", "0x1af4", "Unknown", "0");
  sys.Netdev("eth1", eth, "-1", 1, "dormant");
  sys.Rdma("mlx5_9", eth, 1, "fast", "garbage", "Martian");
  sys.Write("class/infiniband/mlx5_9/ports/notaport/rate", "1");
  const std::vector<SysfsNic> nics = ListSysfsNics(sys.root());
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_EQ(nics[0].gbps, 0);
  EXPECT_FALSE(nics[0].up);
  EXPECT_EQ(nics[0].link_layer, LinkLayer::kUnknown);
  EXPECT_EQ(nics[0].numa, -1);
  EXPECT_EQ(nics[1].gbps, 0);
  EXPECT_FALSE(HasActiveRdmaPort(sys.root()));
  Host h;
  AddSysfsFacts(sys.root(), h);
  EXPECT_EQ(h.pci[h.FindPci("0000:00:05.0")].link_gbps, 0);
  EXPECT_TRUE(ListSysfsNics(sys.root() + "/nonexistent").empty());
}

TEST(LocalDiscoveryTest, ThisMachineAlwaysGivesAHostAndSaysWhatIsMissing) {
  const LocalDiscovery d = DiscoverLocalHost();
  for (const Nic& n : d.host.nics) EXPECT_GE(n.rail, 0) << n.name << ": AssignNics ran";
  if (d.host.gpus.empty()) {
    EXPECT_THAT(d.notes, Contains("no GPU found"));
  }
  const LocalDiscovery fake = DiscoverLocalHost({.sysfs_root = "/nonexistent", .use_hwloc = false});
  EXPECT_TRUE(fake.host.nics.empty());
  EXPECT_THAT(fake.notes, Contains("no GPU found"));
  EXPECT_THAT(fake.notes, Contains("no InfiniBand device"));
  EXPECT_THAT(fake.notes, Contains("no NIC with a PCI device found"));
}

}  // namespace
}  // namespace trirace::topo
