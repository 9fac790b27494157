#include "sim/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/affinity.h"
#include "topology/discovery/spec_file.h"

namespace trirace::sim {
namespace {

std::string BusId(int bus) {
  static const char kHex[] = "0123456789abcdef";
  std::string b = "00";
  b[0] = kHex[(bus >> 4) & 15];
  b[1] = kHex[bus & 15];
  return "0000:" + b + ":00.0";
}

// One host of `gpus` GPUs and `nics` NICs over `switches` PCIe switches,
// GPUs and NICs spread evenly, each switch under CPU (switch % numa).
topo::Host MakeHost(int gpus, int nics, int switches, double pcie_gbps, double nic_gbps, int nvlinks,
                    double nvlink_gbps, topo::LinkLayer layer, int numa) {
  topo::Host h;
  h.numa_nodes = numa;
  int bus = 0x10;
  for (int s = 0; s < switches; ++s) {
    topo::PciNode sw;
    sw.busid = BusId(bus++);
    sw.is_switch = true;
    sw.numa = s * numa / switches;
    sw.link_gbps = pcie_gbps;
    h.pci.push_back(sw);
  }
  auto place = [&](int i, int n) {
    if (switches == 0) return -1;  // a virtual device, outside any PCIe tree
    topo::PciNode ep;
    ep.busid = BusId(bus++);
    ep.parent = i * switches / n;
    ep.numa = h.pci[size_t(ep.parent)].numa;
    ep.link_gbps = pcie_gbps;
    h.pci.push_back(ep);
    return int(h.pci.size()) - 1;
  };
  for (int g = 0; g < gpus; ++g) {
    topo::Gpu gpu;
    gpu.pci_node = place(g, gpus);
    gpu.pci = h.pci[size_t(gpu.pci_node)].busid;
    gpu.numa = h.pci[size_t(gpu.pci_node)].numa;
    gpu.dev = g;
    if (nvlinks > 0) {
      gpu.nvlinks.push_back({"nvswitch", nvlinks});
      gpu.nvlink_gbps = nvlink_gbps;
    }
    h.gpus.push_back(gpu);
  }
  for (int n = 0; n < nics; ++n) {
    topo::Nic nic;
    nic.pci_node = place(n, nics);
    if (nic.pci_node >= 0) {
      nic.pci = h.pci[size_t(nic.pci_node)].busid;
      nic.numa = h.pci[size_t(nic.pci_node)].numa;
    } else {
      nic.numa = 0;
    }
    nic.name = layer == topo::LinkLayer::kInfiniBand ? absl::StrCat("mlx5_", n) : absl::StrCat("up", n);
    nic.link_layer = layer;
    nic.gbps = nic_gbps;
    h.nics.push_back(nic);
  }
  return h;
}

Cluster Builtin(const std::string& name, int testbed_nics) {
  Cluster c;
  c.name = name;
  topo::Host proto;
  int hosts = 4;
  if (name == "dgx-h100") {
    // PCIe Gen5 x16 (~504 Gbit/s); a GPU and its NIC share a switch.
    proto = MakeHost(8, 8, 8, 504, 400, 18, 200, topo::LinkLayer::kInfiniBand, 2);
    c.system.fabric.kind = topo::Fabric::Kind::kRailOptimized;
    c.ranks_per_host = 8;
    c.transport = Transport::kRdma;
    c.net_latency_ns = 5'000;
    c.local_latency_ns = 2'000;
  } else if (name == "pcie-2nic") {
    // PCIe Gen4 x16 (~252 Gbit/s): 4 GPUs and one NIC per switch.
    proto = MakeHost(8, 2, 2, 252, 100, 0, 0, topo::LinkLayer::kInfiniBand, 2);
    c.system.fabric.kind = topo::Fabric::Kind::kSingleSwitch;
    c.ranks_per_host = 8;
    c.transport = Transport::kRdma;
    c.net_latency_ns = 6'000;
    c.local_latency_ns = 4'000;
  } else {  // testbed
    proto = MakeHost(0, std::max(testbed_nics, 1), 0, 0, 0.3, 0, 0, topo::LinkLayer::kEthernet, 1);
    // Several uplinks are rails, each on a bridge of its own (testbed.sh).
    c.system.fabric.kind = testbed_nics > 1 ? topo::Fabric::Kind::kRailOptimized : topo::Fabric::Kind::kSingleSwitch;
    c.ranks_per_host = 2;
    c.transport = Transport::kSocket;
    // Loopback sockets through veths and the plugin's framing; hostccl's
    // shared memory inside a host.
    c.net_latency_ns = 100'000;
    c.local_latency_ns = 20'000;
    c.qos = Qos::kFabric;  // run_e2e.sh brings the bed up with --prio
    c.burst_bytes = -1;  // from the rate, below
    c.line_gbps = 10;
    // Measured on the bed (docs/simulation.md, "Calibration"): P2P alone
    // between two hosts moves 97.7% of the shaped rate; a compute-bound
    // run takes 4.2% longer than its emulated compute.
    c.nic_efficiency = 0.977;
    c.compute_scale = 1.042;
  }
  for (int h = 0; h < hosts; ++h) {
    topo::Host host = proto;
    host.key = name == "testbed" ? absl::StrCat("h", h) : absl::StrCat("node", h);
    c.system.hosts.push_back(std::move(host));
  }
  return c;
}

bool IsBuiltin(const std::string& name) {
  const std::vector<std::string> names = BuiltinClusterNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string_view QosName(Qos q) {
  switch (q) {
    case Qos::kNone: return "none";
    case Qos::kHost: return "host";
    case Qos::kFabric: return "fabric";
  }
  return "none";
}

std::optional<Qos> QosFromName(std::string_view name) {
  for (Qos q : {Qos::kNone, Qos::kHost, Qos::kFabric}) {
    if (QosName(q) == name) return q;
  }
  return std::nullopt;
}

bool QosHonours(Qos qos, std::string_view link) {
  switch (qos) {
    case Qos::kNone: return false;
    case Qos::kHost: return link.starts_with("nic-tx:");
    case Qos::kFabric: return true;
  }
  return false;
}

std::vector<std::string> BuiltinClusterNames() { return {"dgx-h100", "pcie-2nic", "testbed"}; }

topo::Endpoint Cluster::EndpointOf(int rank) const {
  const int host = HostOf(rank);
  const topo::Host& h = system.hosts[size_t(host)];
  if (h.gpus.empty()) {
    if (h.nics.empty()) return {host, -1, -1};
    int nic = 0;
    if (size_t(rank) < nic_of_rank.size()) nic = std::clamp(nic_of_rank[size_t(rank)], 0, int(h.nics.size()) - 1);
    return {host, -1, nic};
  }
  return {host, (rank % ranks_per_host) % int(h.gpus.size()), -1};
}

int Cluster::NicOf(int rank) const {
  const topo::Endpoint e = EndpointOf(rank);
  const topo::Host& h = system.hosts[size_t(e.host)];
  if (e.gpu >= 0) return h.gpus[size_t(e.gpu)].nic;
  return e.nic;
}

double Cluster::NicBytesPerS(int rank) const {
  const int nic = NicOf(rank);
  if (nic < 0) return 0;
  return system.hosts[size_t(HostOf(rank))].nics[size_t(nic)].gbps * 1e9 / 8;
}

absl::StatusOr<Cluster> MakeCluster(const std::string& name_or_file, const ClusterOptions& o) {
  Cluster c;
  if (o.nics < 0 || o.nics > 8 || (o.nics > 0 && name_or_file != "testbed")) {
    return absl::InvalidArgumentError(absl::StrCat("--nics ", o.nics, ": expected 1 to 8, for the testbed cluster"));
  }
  if (IsBuiltin(name_or_file)) {
    c = Builtin(name_or_file, o.nics);
  } else if (name_or_file.empty() || (name_or_file.find('/') == std::string::npos &&
                                      name_or_file.find('.') == std::string::npos)) {
    return absl::InvalidArgumentError(absl::StrCat("--cluster '", name_or_file, "': expected one of ",
                                                   absl::StrJoin(BuiltinClusterNames(), ", "),
                                                   " or a JSON topology spec file"));
  } else {
    absl::StatusOr<topo::System> system = topo::LoadTopologySpec(name_or_file);
    if (!system.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--cluster '", name_or_file, "': ", system.status().message()));
    }
    c.name = name_or_file;
    c.system = *std::move(system);
    if (c.system.hosts.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--cluster '", name_or_file, "': the spec has no hosts"));
    }
    const topo::Host& h0 = c.system.hosts[0];
    c.ranks_per_host = h0.gpus.empty() ? 1 : int(h0.gpus.size());
    bool ib = !h0.nics.empty();
    for (const topo::Nic& n : h0.nics) ib = ib && n.link_layer == topo::LinkLayer::kInfiniBand;
    c.transport = ib ? Transport::kRdma : Transport::kSocket;
    if (!ib) c.net_latency_ns = 100'000;
  }
  if (o.hosts < 0) return absl::InvalidArgumentError(absl::StrCat("--hosts ", o.hosts, ": expected a count >= 1"));
  if (o.hosts > 0) {
    const std::vector<topo::Host> proto = c.system.hosts;
    c.system.hosts.clear();
    for (int h = 0; h < o.hosts; ++h) {
      topo::Host host = proto[size_t(h) % proto.size()];
      host.key = h < int(proto.size()) ? proto[size_t(h)].key
                                       : absl::StrCat(c.name == "testbed" ? "h" : "node", h);
      c.system.hosts.push_back(std::move(host));
    }
  }
  if (o.gbps < 0 || !std::isfinite(o.gbps)) {
    return absl::InvalidArgumentError(absl::StrCat("--gbps ", o.gbps, ": expected a rate > 0 in Gbit/s"));
  }
  for (topo::Host& h : c.system.hosts) {
    if (o.gbps > 0) {
      for (topo::Nic& n : h.nics) n.gbps = o.gbps;
    }
    topo::AssignNics(h);
  }
  if (o.ranks_per_host < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--ranks-per-host ", o.ranks_per_host, ": expected >= 1"));
  }
  if (o.ranks_per_host > 0) c.ranks_per_host = o.ranks_per_host;
  if (o.fabric) c.system.fabric.kind = *o.fabric;
  if (o.oversubscription < 0 || (o.oversubscription > 0 && o.oversubscription < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--oversubscription ", o.oversubscription, ": expected a ratio >= 1 (leaf down : up)"));
  }
  if (o.oversubscription > 0) c.system.fabric.oversubscription = o.oversubscription;
  if (o.hosts_per_leaf < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--hosts-per-leaf ", o.hosts_per_leaf, ": expected >= 1"));
  }
  if (o.hosts_per_leaf > 0) c.system.fabric.hosts_per_leaf = o.hosts_per_leaf;
  if (c.system.fabric.kind == topo::Fabric::Kind::kTwoTier && c.system.fabric.hosts_per_leaf <= 0) {
    c.system.fabric.hosts_per_leaf = 16;
  }
  if (o.transport) c.transport = *o.transport;
  if (o.qos) c.qos = *o.qos;
  if (c.burst_bytes < 0) {
    const double rate = c.system.hosts[0].nics.empty() ? 0 : c.system.hosts[0].nics[0].gbps * 1e9 / 8;
    c.burst_bytes = std::max(rate / 1000, 32768.0);
  }
  return c;
}

}  // namespace trirace::sim
