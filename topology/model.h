// The system model: hosts, their NUMA nodes, PCIe trees, GPUs and NICs, and
// the fabric between hosts — what the scheduler needs to know which
// operations compete for which links (paths.h) and how fast those links are.
//
// A System is plain data. Discovery backends (discovery/*.h) fill it from a
// file or the machine, recording where each fact came from (Source);
// AssignNics() (affinity.h) derives each GPU's NIC and the NICs' rails; the
// path resolver (paths.h) turns an operation into the links it crosses.
//
//   System sys;
//   sys.hosts.push_back(*ParseNcclTopoXml(text, "node.xml"));  // discovery/nccl_xml.h
//   sys.hosts[0].key = "node0";
//   AssignNics(sys.hosts[0]);
//   std::vector<int> links = PathResolver(sys).P2P({0, 1}, {0, 3});
//
// Indices, not pointers, link the parts (a PCI node's parent, a GPU's NIC),
// so a System copies and compares as a value. Bandwidths are in Gbit/s per
// direction (0: unknown).
//
// Pure C++ (no CUDA, NCCL, hwloc or ibverbs header): the simulator and the
// scheduler's tests use it on any machine. Not yet consumed by the
// scheduler or the shim: that wiring is the rest of the topology issue.
//
// Thread safety: none; build a System, then share it read-only.
#ifndef TRIRACE_TOPOLOGY_MODEL_H_
#define TRIRACE_TOPOLOGY_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace trirace::topo {

// Where a fact came from, best-known first in merges.
enum class Source : uint8_t {
  kUnknown,
  kJsonSpec,  // a TriRace JSON spec (test beds, the simulator)
  kNcclXml,   // an NCCL topology XML (NCCL_TOPO_FILE format)
  kHwloc,     // hwloc: the machine or an hwloc XML export
  kSysfs,     // /sys/class/net, /sys/class/infiniband, /sys/bus/pci
  kIbverbs,   // libibverbs port attributes
  kNvml,      // NVML (GPUs, NVLinks)
  kParam,     // a TRIRACE_* / NCCL_* variable
  kDefault,   // assumed
};
absl::string_view SourceName(Source s);

enum class LinkLayer : uint8_t { kUnknown, kInfiniBand, kEthernet };
absl::string_view LinkLayerName(LinkLayer l);

// A node of a host's PCIe tree: a switch (bridge) or an endpoint. The root
// complex of each CPU is implicit: a node with parent -1 hangs off the CPU
// of its NUMA node.
struct PciNode {
  std::string busid;       // "0000:3b:00.0" (normalised: lower case, domain)
  int parent = -1;         // index in Host::pci; -1: directly under the CPU
  int numa = -1;           // the CPU (NUMA node) of the root port
  bool is_switch = false;  // a PCIe switch / bridge
  double link_gbps = 0;    // the link to the parent, per direction
};

struct Gpu {
  std::string pci;   // bus id, as in the source (normalised)
  int pci_node = -1;  // index in Host::pci (-1: not placed in the tree)
  int numa = -1;
  int dev = -1;  // CUDA device index where known
  // NVLink: bus ids of the GPUs (or NVSwitches) it connects to, with the
  // number of links to each, one entry per target (all NVSwitch chips are
  // one "nvswitch" target). An NVSwitch domain connects every GPU in it.
  struct NvLink {
    std::string target;  // a GPU's bus id, or "nvswitch"
    int count = 1;
  };
  std::vector<NvLink> nvlinks;
  double nvlink_gbps = 0;  // per link, per direction
  int nic = -1;            // index in Host::nics of the NIC it uses (AssignNics)
};

struct Nic {
  std::string name;   // netdev ("eth0") or IB device ("mlx5_0")
  std::string pci;    // bus id ("" for virtual devices)
  int pci_node = -1;  // index in Host::pci (-1: not placed in the tree)
  int numa = -1;
  int port = 1;
  LinkLayer link_layer = LinkLayer::kUnknown;
  double gbps = 0;  // port rate per direction
  int rail = -1;    // AssignNics: NIC i of the host (by bus id, then name) is rail i
};

struct Host {
  std::string key;  // host key (TRIRACE_HOST_ID or the host name)
  int numa_nodes = 1;
  std::vector<PciNode> pci;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  // Which backend gave what ("pci", "gpus", "nics", "nic rates", "nvlink").
  struct Provenance {
    std::string fact;
    Source source = Source::kUnknown;
  };
  std::vector<Provenance> provenance;

  // The index of the GPU / NIC / PCI node with this bus id (normalised), or -1.
  int FindGpu(absl::string_view busid) const;
  int FindNic(absl::string_view name_or_busid) const;
  int FindPci(absl::string_view busid) const;
  void Note(absl::string_view fact, Source source);
};

// The network between hosts.
struct Fabric {
  enum class Kind : uint8_t {
    kSingleSwitch,   // every NIC on one non-blocking switch (the default)
    kRailOptimized,  // rail r of every host on leaf r; rails meet at a spine
    kTwoTier,        // hosts grouped under leaves; leaf uplinks oversubscribed
  };
  Kind kind = Kind::kSingleSwitch;
  int hosts_per_leaf = 0;       // kTwoTier: hosts under one leaf switch
  double oversubscription = 1;  // kTwoTier: leaf down / up bandwidth
};
absl::string_view FabricKindName(Fabric::Kind k);

struct System {
  std::vector<Host> hosts;
  Fabric fabric;

  int FindHost(absl::string_view key) const;
};

// "0000:3B:00.0", "3b:00.0" -> "0000:3b:00.0": lower case, with a 4-digit
// domain, so ids from NCCL XML, hwloc and sysfs compare equal.
std::string NormalizeBusId(absl::string_view busid);

// True for "domain:bus:device.function" in hex ("0000:3b:00.0"), the form
// NormalizeBusId gives.
bool LooksLikeBusId(absl::string_view id);

// A PCIe link's rate per direction in Gbit/s from its speed ("16.0 GT/s
// PCIe", as sysfs and NCCL XML write it) and width (lanes), less the line
// encoding (128b/130b from 8 GT/s, 8b/10b below); 0 when either does not
// read.
double PcieGbps(absl::string_view speed, absl::string_view width);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_MODEL_H_
