// A fake /sys built in a temporary folder for the discovery tests: PCI
// functions under devices/pci0000:00/ (nested as on a PCIe path) linked
// from bus/pci/devices, netdevs under class/net and RDMA devices under
// class/infiniband linking to their PCI function, NUMA nodes under
// devices/system/node. Removed with the object.
#ifndef TRIRACE_TESTS_TOPOLOGY_FAKE_SYS_H_
#define TRIRACE_TESTS_TOPOLOGY_FAKE_SYS_H_

#include <filesystem>
#include <fstream>
#include <string>

#include "support/subprocess.h"

namespace trirace::topo::testing {

class FakeSys {
 public:
  FakeSys() : root_(testing_support::MakeTempDir("trirace-fake-sys-")) {}
  ~FakeSys() { std::filesystem::remove_all(root_); }
  FakeSys(const FakeSys&) = delete;
  FakeSys& operator=(const FakeSys&) = delete;

  const std::string& root() const { return root_; }

  // Writes `text` and a newline to <root>/<path>, making the folders.
  void Write(const std::string& path, const std::string& text) const {
    const std::filesystem::path p = std::filesystem::path(root_) / path;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }

  void NumaNodes(int count) const {
    for (int n = 0; n < count; ++n) Write("devices/system/node/node" + std::to_string(n) + "/cpulist", "0");
  }

  struct PciAttrs {
    std::string cls = "0x020000";  // Ethernet controller
    std::string vendor = "0x15b3";
    int numa = -1;  // numa_node; -2: no file
    std::string speed = "16.0 GT/s PCIe";
    std::string width = "16";
  };
  // A PCI function at `chain` ("0000:80:01.0/0000:81:00.0/..."), the last
  // bus id being the function's. Returns its folder under the root.
  std::string Pci(const std::string& chain, const PciAttrs& a) const {
    const std::string dir = "devices/pci0000:00/" + chain;
    const std::string busid = std::filesystem::path(chain).filename().string();
    if (a.numa != -2) Write(dir + "/numa_node", std::to_string(a.numa));
    Write(dir + "/class", a.cls);
    Write(dir + "/vendor", a.vendor);
    Write(dir + "/current_link_speed", a.speed);
    Write(dir + "/current_link_width", a.width);
    std::filesystem::create_directories(root_ + "/bus/pci/devices");
    std::filesystem::create_symlink(root_ + "/" + dir, root_ + "/bus/pci/devices/" + busid);
    return dir;
  }
  std::string Bridge(const std::string& chain, int numa) const {
    return Pci(chain, {.cls = "0x060400", .vendor = "0x1000", .numa = numa});
  }

  // A netdev; `device_dir` "" for a virtual one (no device link).
  void Netdev(const std::string& name, const std::string& device_dir, const std::string& speed, int type = 1,
              const std::string& operstate = "up") const {
    Write("class/net/" + name + "/speed", speed);
    Write("class/net/" + name + "/type", std::to_string(type));
    Write("class/net/" + name + "/operstate", operstate);
    if (!device_dir.empty()) {
      std::filesystem::create_symlink(root_ + "/" + device_dir, root_ + "/class/net/" + name + "/device");
      Write(device_dir + "/net/" + name + "/ifindex", "3");
    }
  }

  // A port of an RDMA device at `device_dir` ("" for none).
  void RdmaPort(const std::string& dev, const std::string& device_dir, int port, const std::string& rate,
                const std::string& state, const std::string& link_layer) const {
    const std::string p = "class/infiniband/" + dev + "/ports/" + std::to_string(port);
    Write(p + "/rate", rate);
    Write(p + "/state", state);
    Write(p + "/link_layer", link_layer);
    const std::string link = root_ + "/class/infiniband/" + dev + "/device";
    if (!device_dir.empty() && !std::filesystem::exists(link)) {
      std::filesystem::create_symlink(root_ + "/" + device_dir, link);
    }
  }

 private:
  std::string root_;
};

}  // namespace trirace::topo::testing

#endif  // TRIRACE_TESTS_TOPOLOGY_FAKE_SYS_H_
