// Small hosts built in code for the affinity and path tests: a PCIe tree
// with switches, GPUs and NICs placed by hand.
#ifndef TRIRACE_TESTS_TOPOLOGY_TOPO_BUILDERS_H_
#define TRIRACE_TESTS_TOPOLOGY_TOPO_BUILDERS_H_

#include <string>

#include "absl/strings/str_format.h"
#include "topology/affinity.h"
#include "topology/model.h"

namespace trirace::topo::testing {

inline std::string Bus(int bus) { return absl::StrFormat("0000:%02x:00.0", bus); }

inline int AddSwitch(Host& h, int bus, int numa, int parent = -1) {
  h.pci.push_back({Bus(bus), parent, numa, true, 256});
  return static_cast<int>(h.pci.size()) - 1;
}

inline int AddGpu(Host& h, int bus, int numa, int parent) {
  h.pci.push_back({Bus(bus), parent, numa, false, 256});
  Gpu g;
  g.pci = Bus(bus);
  g.pci_node = static_cast<int>(h.pci.size()) - 1;
  g.numa = numa;
  h.gpus.push_back(g);
  return static_cast<int>(h.gpus.size()) - 1;
}

inline int AddNic(Host& h, const std::string& name, int bus, int numa, int parent, double gbps = 200) {
  h.pci.push_back({Bus(bus), parent, numa, false, 256});
  Nic n;
  n.name = name;
  n.pci = Bus(bus);
  n.pci_node = static_cast<int>(h.pci.size()) - 1;
  n.numa = numa;
  n.gbps = gbps;
  n.link_layer = LinkLayer::kInfiniBand;
  h.nics.push_back(n);
  return static_cast<int>(h.nics.size()) - 1;
}

// A 2-socket PCIe server: 4 switches (2 per socket), each with 2 GPUs and
// one NIC. NICs are added in reverse bus order, so rails must sort them.
inline Host PcieServer(const std::string& key) {
  Host h;
  h.key = key;
  h.numa_nodes = 2;
  int sw[4];
  for (int s = 0; s < 4; ++s) sw[s] = AddSwitch(h, 0x10 + 0x20 * s, s / 2);
  for (int s = 3; s >= 0; --s) AddNic(h, absl::StrFormat("mlx5_%d", s), 0x13 + 0x20 * s, s / 2, sw[s]);
  for (int s = 0; s < 4; ++s) {
    AddGpu(h, 0x11 + 0x20 * s, s / 2, sw[s]);
    AddGpu(h, 0x12 + 0x20 * s, s / 2, sw[s]);
  }
  return h;
}

// Two DGX-like hosts "node0" and "node1": 8 GPUs on NVSwitch over 2 NUMA
// nodes, one 400 Gbit/s NIC under each GPU's switch (GPU i on rail i), on a
// rail-optimised fabric. AssignNics has run.
inline System TwoDgxHosts() {
  System sys;
  for (const char* key : {"node0", "node1"}) {
    Host h;
    h.key = key;
    h.numa_nodes = 2;
    for (int i = 0; i < 8; ++i) {
      const int sw = AddSwitch(h, 0x10 + 0x10 * i, i / 4);
      const int g = AddGpu(h, 0x11 + 0x10 * i, i / 4, sw);
      h.gpus[g].nvlinks.push_back({"nvswitch", 18});
      h.gpus[g].nvlink_gbps = 200;
      AddNic(h, absl::StrFormat("mlx5_%d", i), 0x12 + 0x10 * i, i / 4, sw, 400);
    }
    AssignNics(h);
    sys.hosts.push_back(h);
  }
  sys.fabric.kind = Fabric::Kind::kRailOptimized;
  return sys;
}

}  // namespace trirace::topo::testing

#endif  // TRIRACE_TESTS_TOPOLOGY_TOPO_BUILDERS_H_
