#include "topology/discovery/json_spec.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace trirace::topo {
namespace {

using nlohmann::json;
using Keys = std::initializer_list<absl::string_view>;

std::string Sub(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}
std::string At(absl::string_view path, size_t i) { return absl::StrCat(path, "[", i, "]"); }

const char* TypeName(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "true or false";
  if (j.is_number()) return "a number";
  return "null";
}

class SpecParser {
 public:
  explicit SpecParser(absl::string_view origin) : origin_(origin) {}
  absl::StatusOr<System> Run(absl::string_view text);

 private:
  absl::Status Error(absl::string_view path, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": ", path, ": ", what));
  }
  absl::Status Expected(absl::string_view path, absl::string_view what, const json& got) const {
    return Error(path, absl::StrCat("expected ", what, ", got ", TypeName(got)));
  }
  // `j` is an object holding only `allowed` keys.
  absl::Status Object(const json& j, absl::string_view path, Keys allowed) const;
  // Field readers: an absent key leaves `out` as it is.
  absl::Status Int(const json& obj, absl::string_view path, const char* key, int min, int* out) const;
  absl::Status Number(const json& obj, absl::string_view path, const char* key, double min, bool min_open,
                      double* out) const;
  absl::Status String(const json& obj, absl::string_view path, const char* key, std::string* out) const;
  absl::Status BusId(const json& obj, absl::string_view path, const char* key, std::string* out) const;
  absl::Status Array(const json& obj, absl::string_view path, const char* key) const;

  absl::Status Fabric(const json& f, System& sys) const;
  absl::Status HostEntry(const json& hosts, size_t index, System& sys) const;
  absl::Status PciTree(const json& list, absl::string_view path, Host& h) const;
  // The PCI node of endpoint `busid` (added under the CPU of `numa` when
  // not listed), and the endpoint's NUMA node reconciled with the node's.
  absl::Status Endpoint(absl::string_view path, const std::string& busid, bool numa_given, Host& h, int* node,
                        int* numa) const;
  absl::Status Gpus(const json& list, absl::string_view path, Host& h) const;
  absl::Status Nics(const json& list, absl::string_view path, Host& h) const;

  std::string origin_;
};

absl::Status SpecParser::Object(const json& j, absl::string_view path, Keys allowed) const {
  if (!j.is_object()) return Expected(path.empty() ? "top level" : path, "an object", j);
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Error(Sub(path, key), absl::StrCat("unknown key (expected one of ", absl::StrJoin(allowed, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status SpecParser::Int(const json& obj, absl::string_view path, const char* key, int min, int* out) const {
  auto it = obj.find(key);
  if (it == obj.end()) return absl::OkStatus();
  const std::string where = Sub(path, key);
  const std::string want = absl::StrCat("an integer >= ", min);
  if (!it->is_number_integer()) return Expected(where, want, *it);
  // nlohmann keeps non-negative integers unsigned: compare in that type first.
  const bool huge = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT_MAX);
  if (huge || it->get<int64_t>() < min || it->get<int64_t>() > INT_MAX) {
    return Error(where, absl::StrCat(it->dump(), ", expected ", want));
  }
  *out = static_cast<int>(it->get<int64_t>());
  return absl::OkStatus();
}

absl::Status SpecParser::Number(const json& obj, absl::string_view path, const char* key, double min, bool min_open,
                                double* out) const {
  auto it = obj.find(key);
  if (it == obj.end()) return absl::OkStatus();
  const std::string where = Sub(path, key);
  if (!it->is_number()) return Expected(where, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < min || (min_open && v == min)) {
    return Error(where, absl::StrCat(it->dump(), ", expected a number ", min_open ? "> " : ">= ", min));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status SpecParser::String(const json& obj, absl::string_view path, const char* key, std::string* out) const {
  auto it = obj.find(key);
  if (it == obj.end()) return absl::OkStatus();
  if (!it->is_string()) return Expected(Sub(path, key), "a string", *it);
  *out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status SpecParser::BusId(const json& obj, absl::string_view path, const char* key, std::string* out) const {
  std::string raw;
  if (absl::Status s = String(obj, path, key, &raw); !s.ok() || raw.empty()) return s;
  *out = NormalizeBusId(raw);
  if (!LooksLikeBusId(*out)) {
    return Error(Sub(path, key), absl::StrCat("\"", raw, "\", expected a PCI bus id like 0000:3b:00.0"));
  }
  return absl::OkStatus();
}

absl::Status SpecParser::Array(const json& obj, absl::string_view path, const char* key) const {
  auto it = obj.find(key);
  if (it != obj.end() && !it->is_array()) return Expected(Sub(path, key), "an array", *it);
  return absl::OkStatus();
}

absl::StatusOr<System> SpecParser::Run(absl::string_view text) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // what(): "[json.exception.parse_error.101] parse error at line 3, column 5: ..."; a
    // number too large for a double is an out_of_range.406 (found by tests/fuzz/topology_fuzz).
    absl::string_view what = e.what();
    if (const size_t end = what.find("] "); end != absl::string_view::npos) what.remove_prefix(end + 2);
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": not valid JSON: ", what));
  }
  if (absl::Status s = Object(doc, "", {"fabric", "hosts"}); !s.ok()) return s;
  System sys;
  if (auto f = doc.find("fabric"); f != doc.end()) {
    if (absl::Status s = Fabric(*f, sys); !s.ok()) return s;
  }
  auto hosts = doc.find("hosts");
  if (hosts == doc.end()) return Error("hosts", "missing, expected an array of hosts");
  if (!hosts->is_array()) return Expected("hosts", "an array of hosts", *hosts);
  if (hosts->empty()) return Error("hosts", "empty, expected at least one host");
  for (size_t i = 0; i < hosts->size(); ++i) {
    if (absl::Status s = HostEntry(*hosts, i, sys); !s.ok()) return s;
  }
  return sys;
}

absl::Status SpecParser::Fabric(const json& f, System& sys) const {
  if (absl::Status s = Object(f, "fabric", {"kind", "hosts_per_leaf", "oversubscription"}); !s.ok()) return s;
  std::string kind;
  if (absl::Status s = String(f, "fabric", "kind", &kind); !s.ok()) return s;
  if (f.contains("kind")) {
    bool known = false;
    for (Fabric::Kind k : {Fabric::Kind::kSingleSwitch, Fabric::Kind::kRailOptimized, Fabric::Kind::kTwoTier}) {
      if (FabricKindName(k) == kind) {
        sys.fabric.kind = k;
        known = true;
      }
    }
    if (!known) {
      return Error("fabric.kind", absl::StrCat("\"", kind, "\", expected single_switch, rail_optimized or two_tier"));
    }
  }
  if (absl::Status s = Int(f, "fabric", "hosts_per_leaf", 0, &sys.fabric.hosts_per_leaf); !s.ok()) return s;
  return Number(f, "fabric", "oversubscription", 0, /*min_open=*/true, &sys.fabric.oversubscription);
}

absl::Status SpecParser::HostEntry(const json& hosts, size_t index, System& sys) const {
  const json& j = hosts[index];
  const std::string path = At("hosts", index);
  if (absl::Status s = Object(j, path, {"key", "numa_nodes", "like", "pci", "gpus", "nics"}); !s.ok()) return s;
  Host h;
  if (absl::Status s = String(j, path, "key", &h.key); !s.ok()) return s;
  if (!j.contains("key")) return Error(Sub(path, "key"), "missing, expected the host's key (a string)");
  if (h.key.empty()) return Error(Sub(path, "key"), "empty, expected the host's key");
  if (const int other = sys.FindHost(h.key); other >= 0) {
    return Error(Sub(path, "key"), absl::StrCat("\"", h.key, "\" is already the key of ", At("hosts", other)));
  }

  std::string like;
  if (absl::Status s = String(j, path, "like", &like); !s.ok()) return s;
  if (j.contains("like")) {
    for (const char* own : {"numa_nodes", "pci", "gpus", "nics"}) {
      if (j.contains(own)) return Error(Sub(path, own), "not allowed with \"like\", which copies the hardware");
    }
    if (like == h.key) return Error(Sub(path, "like"), absl::StrCat("\"", like, "\" is this host's own key"));
    const int source = sys.FindHost(like);
    if (source < 0) {
      for (size_t later = index + 1; later < hosts.size(); ++later) {
        const json& k = hosts[later].is_object() ? hosts[later].value("key", json()) : json();
        if (k.is_string() && k.get<std::string>() == like) {
          return Error(Sub(path, "like"), absl::StrCat("\"", like, "\" is ", At("hosts", later),
                                                       ", not listed before this host (\"like\" copies an earlier one)"));
        }
      }
      return Error(Sub(path, "like"), absl::StrCat("\"", like, "\" is not the key of any host"));
    }
    std::string key = std::move(h.key);
    h = sys.hosts[source];
    h.key = std::move(key);
    sys.hosts.push_back(std::move(h));
    return absl::OkStatus();
  }

  int numa_nodes = 0;
  if (absl::Status s = Int(j, path, "numa_nodes", 1, &numa_nodes); !s.ok()) return s;
  for (const char* list : {"pci", "gpus", "nics"}) {
    if (absl::Status s = Array(j, path, list); !s.ok()) return s;
  }
  const json none = json::array();
  if (absl::Status s = PciTree(j.value("pci", none), Sub(path, "pci"), h); !s.ok()) return s;
  if (absl::Status s = Gpus(j.value("gpus", none), Sub(path, "gpus"), h); !s.ok()) return s;
  if (absl::Status s = Nics(j.value("nics", none), Sub(path, "nics"), h); !s.ok()) return s;

  // Unstated: enough NUMA nodes for every one named.
  int max_numa = -1;
  for (const PciNode& p : h.pci) max_numa = std::max(max_numa, p.numa);
  for (const Gpu& g : h.gpus) max_numa = std::max(max_numa, g.numa);
  for (const Nic& n : h.nics) max_numa = std::max(max_numa, n.numa);
  h.numa_nodes = numa_nodes > 0 ? numa_nodes : std::max(1, max_numa + 1);

  // The spec is the whole truth about what it lists: a GPU without
  // "nvlinks" has none.
  if (!h.pci.empty()) h.Note("pci", Source::kJsonSpec);
  if (j.contains("gpus")) {
    h.Note("gpus", Source::kJsonSpec);
    h.Note("nvlink", Source::kJsonSpec);
  }
  if (j.contains("nics")) h.Note("nics", Source::kJsonSpec);
  if (!h.nics.empty() && std::all_of(h.nics.begin(), h.nics.end(), [](const Nic& n) { return n.gbps > 0; })) {
    h.Note("nic rates", Source::kJsonSpec);
  }
  sys.hosts.push_back(std::move(h));
  return absl::OkStatus();
}

absl::Status SpecParser::PciTree(const json& list, absl::string_view path, Host& h) const {
  // Parents may be listed after their children: collect, then link.
  std::vector<std::string> parents(list.size());
  std::vector<bool> numa_given(list.size(), false);
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string p = At(path, i);
    if (absl::Status s = Object(e, p, {"busid", "parent", "switch", "numa", "gbps"}); !s.ok()) return s;
    PciNode node;
    if (absl::Status s = BusId(e, p, "busid", &node.busid); !s.ok()) return s;
    if (node.busid.empty()) return Error(Sub(p, "busid"), "missing, expected a PCI bus id");
    if (const int dup = h.FindPci(node.busid); dup >= 0) {
      return Error(Sub(p, "busid"), absl::StrCat(node.busid, " is already ", At(path, dup)));
    }
    if (absl::Status s = BusId(e, p, "parent", &parents[i]); !s.ok()) return s;
    if (auto sw = e.find("switch"); sw != e.end()) {
      if (!sw->is_boolean()) return Expected(Sub(p, "switch"), "true or false", *sw);
      node.is_switch = sw->get<bool>();
    }
    if (absl::Status s = Int(e, p, "numa", -1, &node.numa); !s.ok()) return s;
    numa_given[i] = e.contains("numa");
    if (absl::Status s = Number(e, p, "gbps", 0, false, &node.link_gbps); !s.ok()) return s;
    h.pci.push_back(std::move(node));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (parents[i].empty()) continue;
    h.pci[i].parent = h.FindPci(parents[i]);
    if (h.pci[i].parent < 0) {
      return Error(Sub(At(path, i), "parent"), absl::StrCat(parents[i], " is not a bus id listed in ", path));
    }
  }
  // A chain longer than the tree has a cycle.
  for (size_t i = 0; i < h.pci.size(); ++i) {
    size_t steps = 0;
    for (int n = h.pci[i].parent; n >= 0; n = h.pci[n].parent) {
      if (++steps > h.pci.size()) return Error(Sub(At(path, i), "parent"), "the parents form a cycle");
    }
  }
  // A node's NUMA node is its root port's: inherited when not given, checked
  // when given. Resolve each chain from the root down.
  std::vector<bool> done(h.pci.size(), false);
  for (size_t i = 0; i < h.pci.size(); ++i) {
    std::vector<int> chain;
    for (int n = static_cast<int>(i); n >= 0 && !done[n]; n = h.pci[n].parent) chain.push_back(n);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      PciNode& node = h.pci[*it];
      done[*it] = true;
      if (node.parent < 0) continue;
      const int above = h.pci[node.parent].numa;
      if (!numa_given[*it]) {
        node.numa = above;
      } else if (node.numa >= 0 && above >= 0 && node.numa != above) {
        return Error(Sub(At(path, *it), "numa"),
                     absl::StrCat(node.numa, ", but its parent ", h.pci[node.parent].busid, " is on NUMA node ", above));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SpecParser::Endpoint(absl::string_view path, const std::string& busid, bool numa_given, Host& h,
                                  int* node, int* numa) const {
  *node = h.FindPci(busid);
  if (*node < 0) {
    h.pci.push_back({busid, -1, *numa, false, 0});
    *node = static_cast<int>(h.pci.size()) - 1;
    return absl::OkStatus();
  }
  const PciNode& p = h.pci[*node];
  if (p.is_switch) return Error(Sub(path, "pci"), absl::StrCat(busid, " is a PCIe switch, expected an endpoint"));
  if (!numa_given) {
    *numa = p.numa;
  } else if (*numa >= 0 && p.numa >= 0 && *numa != p.numa) {
    return Error(Sub(path, "numa"), absl::StrCat(*numa, ", but its PCI node ", busid, " is on NUMA node ", p.numa));
  }
  return absl::OkStatus();
}

absl::Status SpecParser::Gpus(const json& list, absl::string_view path, Host& h) const {
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string p = At(path, i);
    if (absl::Status s = Object(e, p, {"pci", "numa", "dev", "nvlinks", "nvlink_gbps"}); !s.ok()) return s;
    Gpu g;
    if (absl::Status s = BusId(e, p, "pci", &g.pci); !s.ok()) return s;
    if (g.pci.empty()) return Error(Sub(p, "pci"), "missing, expected the GPU's PCI bus id");
    if (const int dup = h.FindGpu(g.pci); dup >= 0) {
      return Error(Sub(p, "pci"), absl::StrCat(g.pci, " is already ", At(path, dup)));
    }
    if (absl::Status s = Int(e, p, "numa", -1, &g.numa); !s.ok()) return s;
    if (absl::Status s = Endpoint(p, g.pci, e.contains("numa"), h, &g.pci_node, &g.numa); !s.ok()) return s;
    if (absl::Status s = Int(e, p, "dev", -1, &g.dev); !s.ok()) return s;
    if (absl::Status s = Number(e, p, "nvlink_gbps", 0, false, &g.nvlink_gbps); !s.ok()) return s;
    if (absl::Status s = Array(e, p, "nvlinks"); !s.ok()) return s;
    const json links = e.value("nvlinks", json::array());
    for (size_t l = 0; l < links.size(); ++l) {
      const std::string lp = At(Sub(p, "nvlinks"), l);
      if (absl::Status s = Object(links[l], lp, {"target", "count"}); !s.ok()) return s;
      Gpu::NvLink link;
      if (links[l].value("target", json()) == "nvswitch") {
        link.target = "nvswitch";
      } else if (absl::Status s = BusId(links[l], lp, "target", &link.target); !s.ok()) {
        return s;
      }
      if (link.target.empty()) return Error(Sub(lp, "target"), "missing, expected a GPU's bus id or \"nvswitch\"");
      if (absl::Status s = Int(links[l], lp, "count", 1, &link.count); !s.ok()) return s;
      g.nvlinks.push_back(std::move(link));
    }
    h.gpus.push_back(std::move(g));
  }
  return absl::OkStatus();
}

absl::Status SpecParser::Nics(const json& list, absl::string_view path, Host& h) const {
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string p = At(path, i);
    if (absl::Status s = Object(e, p, {"name", "pci", "numa", "port", "link_layer", "gbps"}); !s.ok()) return s;
    Nic n;
    if (absl::Status s = String(e, p, "name", &n.name); !s.ok()) return s;
    if (n.name.empty()) return Error(Sub(p, "name"), "missing, expected the NIC's name (\"mlx5_0\", \"eth0\")");
    if (absl::Status s = Int(e, p, "port", 0, &n.port); !s.ok()) return s;
    for (size_t k = 0; k < h.nics.size(); ++k) {
      if (h.nics[k].name == n.name && h.nics[k].port == n.port) {
        return Error(Sub(p, "name"), absl::StrCat("\"", n.name, "\" port ", n.port, " is already ", At(path, k)));
      }
    }
    if (absl::Status s = BusId(e, p, "pci", &n.pci); !s.ok()) return s;
    if (absl::Status s = Int(e, p, "numa", -1, &n.numa); !s.ok()) return s;
    if (!n.pci.empty()) {
      if (const int gpu = h.FindGpu(n.pci); gpu >= 0) {
        return Error(Sub(p, "pci"), absl::StrCat(n.pci, " is the bus id of gpus[", gpu, "]"));
      }
      if (absl::Status s = Endpoint(p, n.pci, e.contains("numa"), h, &n.pci_node, &n.numa); !s.ok()) return s;
    }
    std::string layer;
    if (absl::Status s = String(e, p, "link_layer", &layer); !s.ok()) return s;
    if (layer == "ib") {
      n.link_layer = LinkLayer::kInfiniBand;
    } else if (layer == "eth") {
      n.link_layer = LinkLayer::kEthernet;
    } else if (e.contains("link_layer")) {
      return Error(Sub(p, "link_layer"), absl::StrCat("\"", layer, "\", expected \"ib\" or \"eth\""));
    }
    if (absl::Status s = Number(e, p, "gbps", 0, false, &n.gbps); !s.ok()) return s;
    h.nics.push_back(std::move(n));
  }
  return absl::OkStatus();
}

// Whole numbers print without ".0": specs are read by people too.
json Num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return json(static_cast<int64_t>(v));
  return json(v);
}

// The NUMA node the parser gives a GPU or NIC on bus `busid` that names none.
int InferredNuma(const Host& h, const std::string& busid) {
  const int node = busid.empty() ? -1 : h.FindPci(busid);
  return node >= 0 ? h.pci[node].numa : -1;
}

}  // namespace

absl::StatusOr<System> ParseJsonSpec(absl::string_view text, absl::string_view origin) {
  return SpecParser(origin).Run(text);
}

std::string ToJsonSpec(const System& system) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  ojson& fabric = doc["fabric"];
  fabric["kind"] = std::string(FabricKindName(system.fabric.kind));
  if (system.fabric.hosts_per_leaf != 0) fabric["hosts_per_leaf"] = system.fabric.hosts_per_leaf;
  if (system.fabric.oversubscription != 1) fabric["oversubscription"] = Num(system.fabric.oversubscription);
  ojson hosts = ojson::array();
  for (const Host& h : system.hosts) {
    ojson host;
    host["key"] = h.key;
    host["numa_nodes"] = h.numa_nodes;
    // Only what differs from what the parser infers: a NUMA node equal to the
    // parent's, default ports and unknown rates are left out.
    if (!h.pci.empty()) {
      ojson& pci = host["pci"] = ojson::array();
      for (const PciNode& p : h.pci) {
        ojson node;
        node["busid"] = p.busid;
        const bool has_parent = p.parent >= 0 && p.parent < static_cast<int>(h.pci.size());
        if (has_parent) node["parent"] = h.pci[p.parent].busid;
        if (p.is_switch) node["switch"] = true;
        if (p.numa != (has_parent ? h.pci[p.parent].numa : -1)) node["numa"] = p.numa;
        if (p.link_gbps != 0) node["gbps"] = Num(p.link_gbps);
        pci.push_back(std::move(node));
      }
    }
    ojson& gpus = host["gpus"] = ojson::array();
    for (const Gpu& g : h.gpus) {
      ojson gpu;
      gpu["pci"] = g.pci;
      if (g.numa != InferredNuma(h, g.pci)) gpu["numa"] = g.numa;
      if (g.dev != -1) gpu["dev"] = g.dev;
      if (!g.nvlinks.empty()) {
        ojson& links = gpu["nvlinks"] = ojson::array();
        for (const Gpu::NvLink& l : g.nvlinks) links.push_back({{"target", l.target}, {"count", l.count}});
      }
      if (g.nvlink_gbps != 0) gpu["nvlink_gbps"] = Num(g.nvlink_gbps);
      gpus.push_back(std::move(gpu));
    }
    ojson& nics = host["nics"] = ojson::array();
    for (const Nic& n : h.nics) {
      ojson nic;
      nic["name"] = n.name;
      if (!n.pci.empty()) nic["pci"] = n.pci;
      if (n.numa != InferredNuma(h, n.pci)) nic["numa"] = n.numa;
      if (n.port != 1) nic["port"] = n.port;
      if (n.link_layer != LinkLayer::kUnknown) nic["link_layer"] = std::string(LinkLayerName(n.link_layer));
      if (n.gbps != 0) nic["gbps"] = Num(n.gbps);
      nics.push_back(std::move(nic));
    }
    hosts.push_back(std::move(host));
  }
  doc["hosts"] = std::move(hosts);
  return doc.dump(2) + "\n";
}

}  // namespace trirace::topo
