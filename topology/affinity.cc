#include "topology/affinity.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trirace::topo {
namespace {

// The chain of PCI nodes from `node` up to its root, `node` first.
std::vector<int> Ancestors(const Host& host, int node) {
  std::vector<int> chain;
  for (int n = node; n >= 0 && n < static_cast<int>(host.pci.size()); n = host.pci[n].parent) {
    if (chain.size() > host.pci.size()) break;  // a cycle in a bad file: stop
    chain.push_back(n);
  }
  return chain;
}

int RootNuma(const Host& host, int node, int fallback) {
  const std::vector<int> chain = Ancestors(host, node);
  if (chain.empty()) return fallback;
  const int numa = host.pci[chain.back()].numa;
  return numa >= 0 ? numa : fallback;
}

}  // namespace

absl::string_view PathTypeName(PathType t) {
  switch (t) {
    case PathType::kLoc:
      return "LOC";
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kSys:
      return "SYS";
  }
  return "SYS";
}

PathType PciPathType(const Host& host, int a, int numa_a, int b, int numa_b) {
  if (a >= 0 && a == b) return PathType::kLoc;
  const std::vector<int> up_a = Ancestors(host, a);
  const std::vector<int> up_b = Ancestors(host, b);
  // The closest common switch: the first ancestor of a (past a itself) that
  // is also an ancestor of b. Switches only: an endpoint is never a hop.
  for (size_t i = 1; i < up_a.size(); ++i) {
    const auto it = std::find(up_b.begin(), up_b.end(), up_a[i]);
    if (it == up_b.end()) continue;
    const bool directly_under = i == 1 && it == up_b.begin() + 1;
    return directly_under ? PathType::kPix : PathType::kPxb;
  }
  return RootNuma(host, a, numa_a) == RootNuma(host, b, numa_b) ? PathType::kPhb : PathType::kSys;
}

void AssignNics(Host& host) {
  std::vector<int> order(host.nics.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&host](int x, int y) {
    const Nic& a = host.nics[x];
    const Nic& b = host.nics[y];
    if (a.pci.empty() != b.pci.empty()) return !a.pci.empty();  // PCI NICs first
    if (a.pci != b.pci) return a.pci < b.pci;
    if (a.port != b.port) return a.port < b.port;
    return a.name < b.name;
  });
  for (size_t r = 0; r < order.size(); ++r) host.nics[order[r]].rail = static_cast<int>(r);

  std::vector<int> users(host.nics.size(), 0);
  for (Gpu& gpu : host.gpus) {
    gpu.nic = -1;
    PathType best_type = PathType::kSys;
    for (int n : order) {
      const Nic& nic = host.nics[n];
      const PathType t = PciPathType(host, gpu.pci_node, gpu.numa, nic.pci_node, nic.numa);
      const bool better = gpu.nic < 0 || t < best_type || (t == best_type && users[n] < users[gpu.nic]);
      if (better) {
        gpu.nic = n;
        best_type = t;
      }
    }
    if (gpu.nic >= 0) ++users[gpu.nic];
  }
}

bool NicAllowed(absl::string_view name, absl::string_view list) {
  list = absl::StripAsciiWhitespace(list);
  if (list.empty()) return true;
  const bool exclude = absl::ConsumePrefix(&list, "^");
  const bool exact = absl::ConsumePrefix(&list, "=");
  bool listed = false;
  for (absl::string_view entry : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    entry = entry.substr(0, entry.find(':'));  // NCCL_IB_HCA's ":port"
    if (entry.empty()) continue;
    if (exact ? name == entry : absl::StartsWith(name, entry)) listed = true;
  }
  return exclude ? !listed : listed;
}

void FilterNics(Host& host, absl::string_view list) {
  std::vector<Nic> kept;
  std::vector<int> new_index(host.nics.size(), -1);
  for (size_t i = 0; i < host.nics.size(); ++i) {
    if (!NicAllowed(host.nics[i].name, list)) continue;
    new_index[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(host.nics[i]));
  }
  host.nics = std::move(kept);
  for (Gpu& gpu : host.gpus) gpu.nic = gpu.nic >= 0 ? new_index[gpu.nic] : -1;
}

}  // namespace trirace::topo
