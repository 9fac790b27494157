// sysfs discovery: the NICs of this machine and the PCI facts around them,
// read from a sysfs tree (/sys, or a fake tree in tests).
//
//   <root>/class/net/<if>/                 netdevs: operstate, speed (Mbit/s,
//                                          common/net_interfaces.h reads it),
//                                          device -> the PCI device, type
//                                          (1 Ethernet, 32 IPoIB, 772 loopback)
//   <root>/class/infiniband/<dev>/ports/<p>/
//                                          RDMA devices: rate ("200 Gb/sec (4X HDR)"),
//                                          state ("4: ACTIVE"), link_layer
//                                          ("InfiniBand" | "Ethernet"), device ->
//                                          the PCI device
//   <root>/bus/pci/devices/<busid>/        numa_node, class, vendor,
//                                          current_link_speed ("16.0 GT/s PCIe"),
//                                          current_link_width
// Loopback and virtual interfaces (no device link) are listed with an empty
// bus id and is_virtual set. Missing or odd entries leave the field unknown
// (0, -1, "") and never fail. Every fact gets Source::kSysfs.
//
// Thread safety: stateless.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_SYSFS_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_SYSFS_H_

#include <string>
#include <vector>

#include "topology/model.h"

namespace trirace::topo {

struct SysfsNic {
  std::string name;     // netdev ("eth0") or RDMA device ("mlx5_0")
  std::string netdev;   // the netdev of an RDMA port, where sysfs links one
  std::string pci;      // normalised bus id, "" for virtual devices
  int numa = -1;
  int port = 1;
  LinkLayer link_layer = LinkLayer::kUnknown;
  double gbps = 0;      // 0: unknown
  bool rdma = false;    // listed under class/infiniband
  bool up = false;      // operstate "up" / port state ACTIVE
  bool is_virtual = false;
};

// Every NIC under `root`: RDMA ports first (by device, port), then netdevs
// that are not an RDMA port's netdev (by name).
std::vector<SysfsNic> ListSysfsNics(const std::string& root = "/sys");

// True when `root` has an RDMA device with an ACTIVE port.
bool HasActiveRdmaPort(const std::string& root = "/sys");

// Adds to `host` what sysfs knows, keeping every fact `host` already has:
//   - GPUs: PCI functions of class 0x0300 / 0x0302 from NVIDIA (vendor
//     0x10de), by bus id;
//   - NICs: every non-virtual entry of ListSysfsNics (RDMA ports, netdevs
//     with a PCI device);
//   - the PCIe tree above each of them, from the device's path under
//     /sys/devices: the PCIe switches on the way, each as its upstream port
//     (root and downstream ports are not nodes, as in NCCL's topology), with
//     the NUMA node and the current link speed x width of each node.
void AddSysfsFacts(const std::string& root, Host& host);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_SYSFS_H_
