// trirace topo: the system model of this machine or of a topology file (topology/model.h) as a
// tree per host, as JSON for scripts, or as the links each GPU's traffic
// crosses (topology/paths.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "topo_dot.h"
#include "nlohmann/json.hpp"
#include "topology/affinity.h"
#include "topology/discovery/json_spec.h"
#include "topology/discovery/load.h"
#include "topology/discovery/local.h"
#include "topology/local_nic.h"
#include "topology/model.h"
#include "topology/paths.h"

namespace trirace::tools {
namespace {

using topo::Gpu;
using topo::Host;
using topo::Nic;
using topo::PciNode;
using topo::System;

std::string Gbps(double gbps) { return gbps > 0 ? absl::StrFormat("%g Gbit/s", gbps) : "? Gbit/s"; }

// NCCL's path type between a GPU and the NIC it uses.
topo::PathType GpuNicPath(const Host& h, const Gpu& g) {
  const Nic& n = h.nics[g.nic];
  return topo::PciPathType(h, g.pci_node, g.numa, n.pci_node, n.numa);
}

std::string GpuLine(const Host& h, int index) {
  const Gpu& g = h.gpus[index];
  std::string line = absl::StrCat("gpu", index, " ", g.pci);
  if (g.dev >= 0) absl::StrAppend(&line, " dev ", g.dev);
  if (!g.nvlinks.empty()) {
    absl::StrAppend(&line, ", nvlink ", absl::StrJoin(g.nvlinks, " ", [](std::string* out, const Gpu::NvLink& l) {
                      absl::StrAppend(out, l.target, " x", l.count);
                    }));
    if (g.nvlink_gbps > 0) absl::StrAppend(&line, " at ", Gbps(g.nvlink_gbps), " each");
  }
  if (g.nic < 0) return absl::StrCat(line, " -> no NIC");
  const Nic& n = h.nics[g.nic];
  return absl::StrCat(line, " -> ", n.name, " (rail ", n.rail, ", ", topo::PathTypeName(GpuNicPath(h, g)), ")");
}

std::string NicLine(const Nic& n) {
  std::string line = absl::StrCat("nic ", n.name);
  if (!n.pci.empty() && n.pci != n.name) absl::StrAppend(&line, " ", n.pci);
  if (n.port != 1) absl::StrAppend(&line, " port ", n.port);
  return absl::StrCat(line, ": rail ", n.rail, ", ", Gbps(n.gbps), ", ", topo::LinkLayerName(n.link_layer));
}

// One host's PCIe trees, printed from the CPUs down.
class TreePrinter {
 public:
  explicit TreePrinter(const Host& h) : h_(h), children_(h.pci.size()), gpus_(h.pci.size()), nics_(h.pci.size()) {
    for (size_t i = 0; i < h.pci.size(); ++i) {
      const int parent = h.pci[i].parent;
      if (parent >= 0 && parent < static_cast<int>(h.pci.size())) children_[parent].push_back(static_cast<int>(i));
    }
    for (size_t i = 0; i < h.gpus.size(); ++i) Place(h.gpus[i].pci_node, h.gpus[i].numa, gpus_, off_tree_gpus_, i);
    for (size_t i = 0; i < h.nics.size(); ++i) Place(h.nics[i].pci_node, h.nics[i].numa, nics_, off_tree_nics_, i);
  }

  void Print() const {
    std::printf("host %s: %d NUMA node(s), %zu GPU(s), %zu NIC(s)\n", h_.key.c_str(), h_.numa_nodes,
                h_.gpus.size(), h_.nics.size());
    std::set<int> numas;
    for (int n = 0; n < h_.numa_nodes; ++n) numas.insert(n);
    for (const PciNode& p : h_.pci) {
      if (p.parent < 0) numas.insert(p.numa);
    }
    for (const auto& [numa, list] : off_tree_gpus_) numas.insert(numa);
    for (const auto& [numa, list] : off_tree_nics_) numas.insert(numa);
    for (int numa : numas) {
      std::printf("  %s\n", numa >= 0 ? absl::StrCat("numa ", numa).c_str() : "numa unknown");
      for (size_t i = 0; i < h_.pci.size(); ++i) {
        if (h_.pci[i].parent < 0 && h_.pci[i].numa == numa) Node(static_cast<int>(i), 2);
      }
      for (const auto& [n, list] : off_tree_gpus_) {
        for (int g : list) {
          if (n == numa) std::printf("    %s (not in the PCIe tree)\n", GpuLine(h_, g).c_str());
        }
      }
      for (const auto& [n, list] : off_tree_nics_) {
        for (int k : list) {
          if (n == numa) std::printf("    %s (not in the PCIe tree)\n", NicLine(h_.nics[k]).c_str());
        }
      }
    }
  }

 private:
  using OffTree = std::vector<std::pair<int, std::vector<int>>>;  // (numa, items)

  void Place(int node, int numa, std::vector<std::vector<int>>& on, OffTree& off, size_t item) {
    if (node >= 0 && node < static_cast<int>(on.size())) {
      on[node].push_back(static_cast<int>(item));
      return;
    }
    auto it = std::find_if(off.begin(), off.end(), [numa](const auto& e) { return e.first == numa; });
    if (it == off.end()) it = off.emplace(off.end(), numa, std::vector<int>{});
    it->second.push_back(static_cast<int>(item));
  }

  void Node(int i, int depth) const {
    const std::string indent(2 * depth, ' ');
    const PciNode& p = h_.pci[i];
    for (int g : gpus_[i]) std::printf("%s%s\n", indent.c_str(), GpuLine(h_, g).c_str());
    for (int n : nics_[i]) std::printf("%s%s\n", indent.c_str(), NicLine(h_.nics[n]).c_str());
    if (gpus_[i].empty() && nics_[i].empty()) {
      std::printf("%s%s %s%s\n", indent.c_str(), p.is_switch ? "switch" : "pci", p.busid.c_str(),
                  p.link_gbps > 0 ? absl::StrCat(" (", Gbps(p.link_gbps), " up)").c_str() : "");
    }
    for (int c : children_[i]) Node(c, depth + 1);
  }

  const Host& h_;
  std::vector<std::vector<int>> children_, gpus_, nics_;
  OffTree off_tree_gpus_, off_tree_nics_;
};

// "json-spec (pci, gpus, nics)": the facts of each source, in order.
std::string Sources(const Host& h) {
  std::vector<std::pair<topo::Source, std::vector<std::string>>> by_source;
  for (const Host::Provenance& p : h.provenance) {
    auto it = std::find_if(by_source.begin(), by_source.end(), [&](const auto& e) { return e.first == p.source; });
    if (it == by_source.end()) it = by_source.emplace(by_source.end(), p.source, std::vector<std::string>{});
    it->second.push_back(p.fact);
  }
  if (by_source.empty()) return "none recorded";
  return absl::StrJoin(by_source, "; ", [](std::string* out, const auto& e) {
    absl::StrAppend(out, topo::SourceName(e.first), " (", absl::StrJoin(e.second, ", "), ")");
  });
}

void PrintTree(const System& sys) {
  std::printf("fabric: %s", std::string(topo::FabricKindName(sys.fabric.kind)).c_str());
  if (sys.fabric.kind == topo::Fabric::Kind::kTwoTier) {
    std::printf(", %d host(s) per leaf, oversubscription %g", sys.fabric.hosts_per_leaf, sys.fabric.oversubscription);
  }
  std::printf("\n");
  for (const Host& h : sys.hosts) {
    TreePrinter(h).Print();
    std::printf("  sources: %s\n", Sources(h).c_str());
  }
}

// `notes`: discovery's notes (always a "notes" array), null for a file (none).
void PrintJson(const System& sys, const std::vector<std::string>* notes) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  doc["fabric"] = {{"kind", std::string(topo::FabricKindName(sys.fabric.kind))},
                   {"hosts_per_leaf", sys.fabric.hosts_per_leaf},
                   {"oversubscription", sys.fabric.oversubscription}};
  ojson& hosts = doc["hosts"] = ojson::array();
  for (const Host& h : sys.hosts) {
    ojson host = {{"key", h.key}, {"numa_nodes", h.numa_nodes}};
    ojson& pci = host["pci"] = ojson::array();
    for (const PciNode& p : h.pci) {
      pci.push_back({{"busid", p.busid},
                     {"parent", p.parent >= 0 ? ojson(h.pci[p.parent].busid) : ojson()},
                     {"switch", p.is_switch},
                     {"numa", p.numa},
                     {"gbps", p.link_gbps}});
    }
    ojson& gpus = host["gpus"] = ojson::array();
    for (size_t i = 0; i < h.gpus.size(); ++i) {
      const Gpu& g = h.gpus[i];
      ojson gpu = {{"index", i}, {"pci", g.pci}, {"numa", g.numa}, {"dev", g.dev}};
      // The NIC it uses; null where it has none.
      gpu["nic"] = g.nic >= 0 ? ojson(h.nics[g.nic].name) : ojson();
      gpu["nic_pci"] = g.nic >= 0 ? ojson(h.nics[g.nic].pci) : ojson();
      gpu["rail"] = g.nic >= 0 ? ojson(h.nics[g.nic].rail) : ojson();
      gpu["path"] = g.nic >= 0 ? ojson(std::string(topo::PathTypeName(GpuNicPath(h, g)))) : ojson();
      ojson& links = gpu["nvlinks"] = ojson::array();
      for (const Gpu::NvLink& l : g.nvlinks) links.push_back({{"target", l.target}, {"count", l.count}});
      gpu["nvlink_gbps"] = g.nvlink_gbps;
      gpus.push_back(std::move(gpu));
    }
    ojson& nics = host["nics"] = ojson::array();
    for (size_t i = 0; i < h.nics.size(); ++i) {
      const Nic& n = h.nics[i];
      nics.push_back({{"index", i},
                      {"name", n.name},
                      {"pci", n.pci},
                      {"numa", n.numa},
                      {"port", n.port},
                      {"rail", n.rail},
                      {"gbps", n.gbps},
                      {"link_layer", std::string(topo::LinkLayerName(n.link_layer))}});
    }
    ojson& sources = host["sources"] = ojson::object();
    for (const Host::Provenance& p : h.provenance) sources[p.fact] = std::string(topo::SourceName(p.source));
    hosts.push_back(std::move(host));
  }
  if (notes != nullptr) doc["notes"] = *notes;
  std::printf("%s\n", doc.dump(2).c_str());
}

void PrintPaths(const System& sys) {
  if (sys.hosts.empty()) return;
  const Host& h = sys.hosts[0];
  const bool to_host1 = sys.hosts.size() > 1;
  std::printf("paths from host %s, each GPU to %s\n", h.key.c_str(),
              to_host1 ? absl::StrCat("the same GPU of host ", sys.hosts[1].key, " (else GPU 0 of this host)").c_str()
                       : "GPU 0 of this host");
  if (h.gpus.empty()) std::printf("  (host %s has no GPU)\n", h.key.c_str());
  const topo::PathResolver resolver(sys);
  for (size_t i = 0; i < h.gpus.size(); ++i) {
    const Gpu& g = h.gpus[i];
    const int gpu = static_cast<int>(i);
    std::printf("  gpu%d %s uses %s\n", gpu, g.pci.c_str(),
                g.nic >= 0 ? absl::StrCat(h.nics[g.nic].name, " (rail ", h.nics[g.nic].rail, ")").c_str() : "no NIC");
    const bool remote = to_host1 && i < sys.hosts[1].gpus.size();
    const topo::Endpoint to = remote ? topo::Endpoint{1, gpu} : topo::Endpoint{0, 0};
    const std::string peer = absl::StrCat(remote ? sys.hosts[1].key + " " : "", "gpu", to.gpu);
    const std::vector<int> links = resolver.P2P({0, gpu}, to);
    std::string text = absl::StrJoin(links, ", ", [&](std::string* out, int l) {
      absl::StrAppend(out, resolver.links()[l].name, " (", Gbps(resolver.links()[l].gbps), ")");
    });
    if (links.empty()) text = !remote && gpu == 0 ? "none (the same GPU)" : "none";
    std::printf("    -> %s: %s\n", peer.c_str(), text.c_str());
  }
}

int Topo(const std::string& from, bool json, bool paths, bool spec, const std::string& png) {
  absl::StatusOr<System> sys;
  std::vector<std::string> notes;
  if (from.empty()) {
    topo::LocalDiscovery local = topo::DiscoverLocalHost();
    local.host.key = topo::LocalHostKey();
    sys = System();
    sys->hosts.push_back(std::move(local.host));
    notes = std::move(local.notes);
  } else {
    sys = topo::LoadTopologyFile(from);
  }
  if (!sys.ok()) {
    std::fprintf(stderr, "trirace topo: %s\n", std::string(sys.status().message()).c_str());
    return 1;
  }
  if (!png.empty()) {
    if (absl::Status s = RenderPng(TopologyDot(*sys), png); !s.ok()) {
      std::fprintf(stderr, "trirace topo: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::printf("wrote %s\n", png.c_str());
  } else if (spec) {
    std::printf("%s\n", topo::ToJsonSpec(*sys).c_str());
  } else if (paths) {
    PrintPaths(*sys);
  } else if (json) {
    PrintJson(*sys, from.empty() ? &notes : nullptr);
  } else {
    PrintTree(*sys);
    for (const std::string& n : notes) std::printf("  note: %s\n", n.c_str());
  }
  return 0;
}

}  // namespace

Command AddTopoCommand(CLI::App& trirace) {
  struct State {
    std::string from;
    bool json = false;
    bool paths = false;
    bool spec = false;
    std::string png;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = trirace.add_subcommand(
      "topo", "the hosts, GPUs, NICs, rails and paths of this machine or of a topology file");
  cmd->add_option("--from", state->from,
                  "read this file instead of this machine: an NCCL topology XML, an hwloc XML export "
                  "(read with the module lib/libtrirace-topo-hwloc.so) or a TriRace JSON spec")
      ->type_name("FILE");
  CLI::Option* json = cmd->add_flag("--json", state->json, "print the model as JSON, for scripts");
  CLI::Option* paths = cmd->add_flag("--paths", state->paths,
                                     "print the NIC each GPU of the first host uses and the links to its peer");
  CLI::Option* png = cmd->add_option("--png", state->png, "draw the model into this PNG file (Graphviz)")
                         ->type_name("FILE");
  CLI::Option* spec = cmd->add_flag("--spec", state->spec,
                                    "print the model as a TriRace JSON spec (what TRIRACE_TOPO_FILE takes)");
  json->excludes(paths)->excludes(spec);
  paths->excludes(spec);
  png->excludes(json)->excludes(paths)->excludes(spec);
  cmd->footer(
      "Discovers this machine (hwloc where built, sysfs, libibverbs, NVML), or reads a topology\n"
      "file (an NCCL topology XML, an hwloc XML export or a TriRace JSON spec, told apart by\n"
      "content; docs/topology.md), and prints per host its NUMA nodes, PCIe switches, GPUs and\n"
      "NICs: bus ids, rails, rates, link layers, the NIC each GPU uses with NCCL's path type\n"
      "(PIX, PXB, PHB, SYS) and where each fact came from. --json prints the same as JSON (per\n"
      "GPU: pci, numa, dev, nic, nic_pci, rail, path; per NIC: name, pci, numa, port, rail,\n"
      "gbps, link_layer; null where a GPU has no NIC). --paths prints, for each GPU of the\n"
      "first host, the links to the same GPU of the second host (or to GPU 0 of the first when\n"
      "there is no second). An NCCL or hwloc XML describes one host, keyed \"localhost\"; this\n"
      "machine is keyed TRIRACE_HOST_ID or its host name, and what discovery did not find is\n"
      "listed as notes (\"notes\" in JSON). --png FILE draws the model with Graphviz. --spec\n"
      "writes a TriRace JSON spec, the format the shim's TRIRACE_TOPO_FILE reads.");
  return {cmd, [state] { return Topo(state->from, state->json, state->paths, state->spec, state->png); }};
}

}  // namespace trirace::tools
