// Discovery of this machine: the backends the machine offers, merged into
// one Host, each fact recorded with the backend that gave it.
//
//   1. hwloc    (hwloc.h, where the build found  the PCIe tree, NUMA nodes,
//               hwloc)                           GPUs and NICs by bus id
//   2. sysfs    (sysfs.h)                        NVIDIA GPUs among the PCI
//                                                functions; NICs (RDMA ports,
//                                                netdevs) with rate, link
//                                                layer, bus id, NUMA node;
//                                                the PCIe tree above them
//   3. ibverbs  (ibverbs.h, libibverbs.so.1      each RDMA port's state,
//               at run time)                     speed x width, link layer
//   4. NVML     (nvml.h, libnvidia-ml.so.1 at    GPUs by bus id and their
//               run time)                        active NVLinks
//   then AssignNics (affinity.h): rails and each GPU's NIC.
//
// Merge rule: a fact an earlier backend gave is kept; a later one only adds
// what is missing (a GPU or NIC not listed yet, a rate of 0, an unknown link
// layer or NUMA node, NVLinks of a GPU without any). A fact's provenance
// (Host::provenance: "pci", "gpus", "nics", "nic rates", "nvlink") names the
// first backend that gave it (NoteFirst, sysfs.h); what NVML added is also
// said in `notes` ("NVML: 8 GPU(s), 144 active NVLink(s)").
//
// Discovery never fails: a backend that is absent (not built, library not
// installed, no device, a file unreadable) adds nothing and a line to
// `notes`; so does what the machine lacks ("no GPU found", "no InfiniBand
// device", "no NIC with a PCI device found") and an RDMA port listed as a
// NIC that is not ACTIVE ("mlx5_1 port 1: DOWN").
//
// Thread safety: no shared state; calls from several threads are safe as
// far as the libraries are (libibverbs and NVML are).
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_LOCAL_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_LOCAL_H_

#include <string>
#include <vector>

#include "topology/model.h"

namespace trirace::topo {

struct LocalDiscoveryOptions {
  std::string sysfs_root = "/sys";  // tests point this at a fake tree
  bool use_hwloc = true;
  bool use_ibverbs = true;
  bool use_nvml = true;
  std::string ibverbs_library = "libibverbs.so.1";    // dlopen'ed; tests give a fake's path
  std::string nvml_library = "libnvidia-ml.so.1";     // dlopen'ed; tests give a fake's path
};

struct LocalDiscovery {
  Host host;                       // key left empty; AssignNics has run
  std::vector<std::string> notes;  // what was absent or odd, one line each
};

LocalDiscovery DiscoverLocalHost(const LocalDiscoveryOptions& options = {});

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_LOCAL_H_
