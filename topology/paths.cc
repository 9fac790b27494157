#include "topology/paths.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace trirace::topo {
namespace {

bool OnNvSwitch(const Gpu& g) {
  return std::any_of(g.nvlinks.begin(), g.nvlinks.end(), [](const Gpu::NvLink& l) { return l.target == "nvswitch"; });
}

bool LinkedTo(const Gpu& g, const std::string& busid) {
  return std::any_of(g.nvlinks.begin(), g.nvlinks.end(), [&](const Gpu::NvLink& l) { return l.target == busid; });
}

int NvLinkCount(const Gpu& g) {
  int n = 0;
  for (const Gpu::NvLink& l : g.nvlinks) n += l.count;
  return n;
}

}  // namespace

PathResolver::PathResolver(const System& system) : system_(system) {
  int max_rails = 0;
  for (const Host& h : system.hosts) {
    for (const Nic& n : h.nics) {
      Add(absl::StrCat("nic-tx:", h.key, "/", n.name), n.gbps);
      Add(absl::StrCat("nic-rx:", h.key, "/", n.name), n.gbps);
    }
    for (const Gpu& g : h.gpus) {
      if (g.nvlinks.empty()) continue;
      const double gbps = g.nvlink_gbps * NvLinkCount(g);
      Add(absl::StrCat("nvl-tx:", h.key, "/", g.pci), gbps);
      Add(absl::StrCat("nvl-rx:", h.key, "/", g.pci), gbps);
    }
    for (const PciNode& p : h.pci) {
      if (p.parent < 0 && !p.is_switch) continue;  // an endpoint on a root port: no shared link above it
      Add(absl::StrCat("pcie-up:", h.key, "/", p.busid), p.link_gbps);
      Add(absl::StrCat("pcie-down:", h.key, "/", p.busid), p.link_gbps);
    }
    Add(absl::StrCat("shm:", h.key), 0);
    max_rails = std::max(max_rails, static_cast<int>(h.nics.size()));
  }
  int leaves = 0;
  if (system.fabric.kind == Fabric::Kind::kRailOptimized) leaves = max_rails;
  if (system.fabric.kind == Fabric::Kind::kTwoTier && system.fabric.hosts_per_leaf > 0) {
    const int per = system.fabric.hosts_per_leaf;
    leaves = (static_cast<int>(system.hosts.size()) + per - 1) / per;
  }
  for (int l = 0; l < leaves; ++l) {
    // Capacity: unknown without a spec of the spine (0).
    Add(absl::StrCat("spine-up:leaf", l), 0);
    Add(absl::StrCat("spine-down:leaf", l), 0);
  }
}

int PathResolver::Add(std::string name, double gbps) {
  auto [it, added] = by_name_.try_emplace(name, static_cast<int>(links_.size()));
  if (added) links_.push_back({std::move(name), gbps});
  return it->second;
}

int PathResolver::Find(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

void PathResolver::Append(std::vector<int>& out, absl::string_view name) const {
  const int id = Find(name);
  if (id >= 0 && std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
}

int PathResolver::NicOf(const Endpoint& e) const {
  if (e.host < 0 || e.host >= static_cast<int>(system_.hosts.size())) return -1;
  const Host& h = system_.hosts[e.host];
  if (e.nic >= 0 && e.nic < static_cast<int>(h.nics.size())) return e.nic;
  if (e.gpu >= 0 && e.gpu < static_cast<int>(h.gpus.size()) && h.gpus[e.gpu].nic >= 0) return h.gpus[e.gpu].nic;
  for (size_t i = 0; i < h.nics.size(); ++i) {
    if (h.nics[i].rail == 0) return static_cast<int>(i);
  }
  return h.nics.empty() ? -1 : 0;
}

int PathResolver::LeafOf(int host, int nic) const {
  const Fabric& f = system_.fabric;
  if (f.kind == Fabric::Kind::kRailOptimized) return nic >= 0 ? system_.hosts[host].nics[nic].rail : -1;
  if (f.kind == Fabric::Kind::kTwoTier && f.hosts_per_leaf > 0) return host / f.hosts_per_leaf;
  return -1;
}

std::vector<int> PathResolver::P2P(const Endpoint& from, const Endpoint& to) const {
  std::vector<int> out;
  const int nhosts = static_cast<int>(system_.hosts.size());
  if (from.host < 0 || from.host >= nhosts || to.host < 0 || to.host >= nhosts) return out;
  const Host& ha = system_.hosts[from.host];
  if (from.host == to.host) {
    if (from.gpu == to.gpu && from.gpu >= 0) return out;
    const bool gpus = from.gpu >= 0 && to.gpu >= 0 && from.gpu < static_cast<int>(ha.gpus.size()) &&
                      to.gpu < static_cast<int>(ha.gpus.size());
    if (gpus) {
      const Gpu& a = ha.gpus[from.gpu];
      const Gpu& b = ha.gpus[to.gpu];
      if (LinkedTo(a, b.pci) || LinkedTo(b, a.pci) || (OnNvSwitch(a) && OnNvSwitch(b))) {
        Append(out, absl::StrCat("nvl-tx:", ha.key, "/", a.pci));
        Append(out, absl::StrCat("nvl-rx:", ha.key, "/", b.pci));
        return out;
      }
      if (a.pci_node >= 0 && b.pci_node >= 0) {
        // Up from a to the closest common ancestor, then down to b.
        std::vector<int> up_b;
        for (int n = b.pci_node; n >= 0 && up_b.size() <= ha.pci.size(); n = ha.pci[n].parent) up_b.push_back(n);
        int meet = -1;
        int root_a = a.pci_node;
        size_t steps = 0;
        for (int n = a.pci_node; n >= 0 && steps <= ha.pci.size(); n = ha.pci[n].parent, ++steps) {
          if (std::find(up_b.begin(), up_b.end(), n) != up_b.end()) {
            meet = n;
            break;
          }
          root_a = n;
          Append(out, absl::StrCat("pcie-up:", ha.key, "/", ha.pci[n].busid));
        }
        if (meet < 0 && ha.pci[root_a].numa != ha.pci[up_b.back()].numa) {
          // Root ports of different CPUs: the transfer crosses the CPUs' link,
          // modelled with host memory.
          Append(out, absl::StrCat("shm:", ha.key));
        }
        std::vector<int> down;
        for (int n : up_b) {
          if (n == meet) break;
          down.push_back(n);
        }
        for (auto it = down.rbegin(); it != down.rend(); ++it) {
          Append(out, absl::StrCat("pcie-down:", ha.key, "/", ha.pci[*it].busid));
        }
        if (!out.empty()) return out;
      }
    }
    Append(out, absl::StrCat("shm:", ha.key));
    return out;
  }
  const Host& hb = system_.hosts[to.host];
  const int na = NicOf(from);
  const int nb = NicOf(to);
  if (na >= 0) Append(out, absl::StrCat("nic-tx:", ha.key, "/", ha.nics[na].name));
  const int la = LeafOf(from.host, na);
  const int lb = LeafOf(to.host, nb);
  if (la >= 0 && lb >= 0 && la != lb) {
    Append(out, absl::StrCat("spine-up:leaf", la));
    Append(out, absl::StrCat("spine-down:leaf", lb));
  }
  if (nb >= 0) Append(out, absl::StrCat("nic-rx:", hb.key, "/", hb.nics[nb].name));
  return out;
}

std::vector<int> PathResolver::Ring(std::span<const Endpoint> ranks) const {
  std::vector<int> out;
  if (ranks.size() < 2) return out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (int l : P2P(ranks[i], ranks[(i + 1) % ranks.size()])) {
      if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trirace::topo
