// Discovery of this machine: the backends the machine offers, merged into
// one Host, each fact recorded with the backend that gave it.
//
//   hwloc  (hwloc.h, where built with hwloc)  PCIe tree, NUMA nodes, GPUs
//                                             and NICs by bus id
//   sysfs  (sysfs.h)                          GPUs (NVIDIA PCI functions),
//                                             NICs (/sys/class/net,
//                                             /sys/class/infiniband) with
//                                             speed, bus id and NUMA node,
//                                             the PCIe tree above them
// Merge rule: a fact an earlier backend gave is kept; a later one adds what
// is missing (sysfs's NIC rates where hwloc has none). libibverbs port
// attributes and NVML's NVLinks are not read yet: sysfs's port rate and
// link layer stand for the former; GPUs get no NVLinks without a topology
// file. Missing or odd entries are skipped, never an error: discovery of a
// machine always gives a Host (possibly with no GPU and no NIC); `notes`
// says what was absent, one line each ("no GPU found", "no InfiniBand
// device", "hwloc: built without hwloc, the PCIe tree comes from sysfs").
//
// Thread safety: none needed (no shared state).
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_LOCAL_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_LOCAL_H_

#include <string>
#include <vector>

#include "topology/model.h"

namespace trirace::topo {

struct LocalDiscoveryOptions {
  std::string sysfs_root = "/sys";  // tests point this at a fake tree
  bool use_hwloc = true;
};

struct LocalDiscovery {
  Host host;                       // key left empty; AssignNics has run
  std::vector<std::string> notes;  // what was absent, one line each
};

LocalDiscovery DiscoverLocalHost(const LocalDiscoveryOptions& options = {});

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_LOCAL_H_
