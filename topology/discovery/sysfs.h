// sysfs discovery: the NICs of this machine, its NVIDIA GPUs and the PCIe
// tree above them, read from a sysfs tree (/sys, or a fake tree in tests).
//
//   <root>/class/net/<if>/                 netdevs: operstate, speed (Mbit/s,
//                                          read by common/net_interfaces.h),
//                                          device -> the device (PCI, or a
//                                          virtio device under a PCI function),
//                                          type (1 Ethernet, 32 IPoIB,
//                                          772 loopback)
//   <root>/class/infiniband/<dev>/         RDMA devices (InfiniBand, RoCE):
//     device                               -> the PCI function
//     ports/<p>/rate                       "200 Gb/sec (4X HDR)"
//     ports/<p>/state                      "4: ACTIVE"
//     ports/<p>/link_layer                 "InfiniBand" | "Ethernet"
//     ports/<p>/gid_attrs/ndevs/0          the port's netdev (RoCE)
//   <root>/bus/pci/devices/<busid>/        numa_node, class, vendor,
//                                          current_link_speed ("16.0 GT/s PCIe"),
//                                          current_link_width ("16")
//   <root>/devices/system/node/node<N>     the NUMA nodes
//
// A netdev is virtual (loopback, bridges, veth, docker, ifb) when it has no
// PCI function above its device. Missing, unreadable or odd entries leave
// a field unknown (0, -1, "", kUnknown, false) and never fail: a tree
// without any of these folders gives no NIC and no GPU.
//
// Thread safety: stateless; safe from several threads.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_SYSFS_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_SYSFS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/model.h"

namespace trirace::topo {

// One RDMA port or one netdev as sysfs shows it.
struct SysfsNic {
  std::string name;    // netdev ("eth0") or RDMA device ("mlx5_0")
  std::string netdev;  // an RDMA port's netdev (RoCE, IPoIB), where sysfs links one
  std::string pci;     // normalised bus id of its PCI function, "" for virtual devices
  int numa = -1;       // the PCI function's numa_node; -1: unknown
  int port = 1;        // RDMA port number (netdevs: 1)
  LinkLayer link_layer = LinkLayer::kUnknown;
  double gbps = 0;       // per direction; 0: unknown
  bool rdma = false;     // listed under class/infiniband
  bool up = false;       // netdev operstate "up" / port state ACTIVE
  bool is_virtual = false;
};

// Every NIC under `root`: RDMA ports first (by device name, then port
// number), then the netdevs that are not an RDMA port's (by name). A netdev
// is an RDMA port's when the port names it (gid_attrs/ndevs/0), when its
// dev_port + 1 is the port number under the device's PCI function, or when
// it is the only netdev of an RDMA device's PCI function.
std::vector<SysfsNic> ListSysfsNics(absl::string_view root = "/sys");

// True when `root` has an RDMA device with an ACTIVE port.
bool HasActiveRdmaPort(absl::string_view root = "/sys");

// A port rate as sysfs writes it ("200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X
// SDR)") in Gbit/s; 0 when it does not read.
double IbRateGbps(absl::string_view rate);

// Adds to `host` what sysfs knows, keeping every fact `host` already has
// (the merge rule of local.h): a value is set only where `host` has none
// (rate 0, link layer unknown, NUMA node -1, no bus id), and a fact's
// provenance ("gpus", "nics", "nic rates", "pci") is recorded as kSysfs only
// where no earlier backend recorded it.
//   - GPUs: PCI functions of class 0x0300 / 0x0302 from NVIDIA (vendor
//     0x10de), matched by bus id.
//   - NICs: RDMA ports that are ACTIVE (NCCL's rule: each active port is a
//     device), or the first port of an RDMA device with none ACTIVE; and
//     every netdev of ListSysfsNics that is not virtual. A NIC is matched by
//     name and port, then by bus id where an earlier backend named it by
//     its bus id. An RDMA device an earlier backend already listed with
//     other ports gets no new port.
//   - The PCIe tree above each added GPU and NIC, from the device's path
//     under /sys/devices, NCCL's way: a PCIe switch is its upstream port,
//     the root port above it and the downstream ports under it are no
//     nodes. Each node gets its NUMA node (its own numa_node, else its
//     parent's, else 0 on a machine with one NUMA node, else -1) and its
//     link's current speed x width (PcieGbps).
//   - numa_nodes: at least the count under devices/system/node and the
//     highest NUMA node seen plus one.
void AddSysfsFacts(absl::string_view root, Host& host);

// The merge rule of local.h for provenance, shared by the backends of this
// machine: records `source` for `fact` unless a backend already recorded
// one (Host::Note would replace it).
void NoteFirst(Host& host, absl::string_view fact, Source source);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_SYSFS_H_
