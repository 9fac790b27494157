#include "topology/system_links.h"

#include <algorithm>
#include <utility>

#include "topology/affinity.h"

namespace trirace::topo {

System HostNicSystem(const std::string& host, const std::string& nic, double gbps) {
  System sys;
  Host h;
  h.key = host;
  Nic n;
  n.name = nic;
  n.gbps = gbps;
  h.nics.push_back(std::move(n));
  h.Note("nics", Source::kParam);
  AssignNics(h);
  sys.hosts.push_back(std::move(h));
  return sys;
}

SystemLinks::SystemLinks(System system, std::string local_host)
    : local_host_(std::move(local_host)), system_(std::make_unique<System>(std::move(system))) {
  absl::MutexLock lock(&mu_);
  for (Host& h : system_->hosts) {
    const bool railed = std::all_of(h.nics.begin(), h.nics.end(), [](const Nic& n) { return n.rail >= 0; });
    if (!railed) AssignNics(h);
  }
  local_ = system_->FindHost(local_host_);
  if (local_ < 0) {
    Host h;
    h.key = local_host_;
    system_->hosts.push_back(std::move(h));
    local_ = static_cast<int>(system_->hosts.size()) - 1;
  }
  Resolve();
}

void SystemLinks::Resolve() {
  resolver_ = std::make_unique<PathResolver>(*system_);
  to_id_.clear();
  for (const Link& l : resolver_->links()) {
    auto [it, added] = ids_.try_emplace(l.name, static_cast<int>(links_.size()));
    if (added) links_.push_back(l);
    to_id_.push_back(it->second);
  }
}

std::vector<int> SystemLinks::ToIds(const std::vector<int>& resolver_links) const {
  std::vector<int> out;
  out.reserve(resolver_links.size());
  for (int l : resolver_links) out.push_back(to_id_[l]);
  return out;
}

PeerIdentity SystemLinks::LocalIdentity(const std::string& gpu_pci, const std::string& nic) const {
  absl::MutexLock lock(&mu_);
  const Host& h = system_->hosts[local_];
  PeerIdentity id;
  id.host = local_host_;
  id.gpu_pci = gpu_pci.empty() ? "" : NormalizeBusId(gpu_pci);
  int n = -1;
  if (const int g = h.FindGpu(id.gpu_pci); g >= 0) n = h.gpus[g].nic;
  if (n < 0 && !nic.empty()) n = h.FindNic(nic);
  if (n < 0) n = resolver_->NicOf({.host = local_});
  if (n >= 0) {
    id.nic = h.nics[n].name;
    id.rail = h.nics[n].rail;
    id.nic_gbps = h.nics[n].gbps;
  }
  return id;
}

int SystemLinks::HostOf(const PeerIdentity& id) {
  for (size_t i = 0; i < system_->hosts.size(); ++i) {
    if (WireHostKey(system_->hosts[i].key) == id.host) return static_cast<int>(i);
  }
  Host copy = system_->hosts[local_];
  copy.key = id.host;
  system_->hosts.push_back(std::move(copy));
  return static_cast<int>(system_->hosts.size()) - 1;
}

std::vector<Endpoint> SystemLinks::Place(std::span<const PeerIdentity> ranks) {
  absl::MutexLock lock(&mu_);
  const size_t known_hosts = system_->hosts.size();
  bool grew = false;
  std::vector<Endpoint> out;
  out.reserve(ranks.size());
  for (const PeerIdentity& id : ranks) {
    Endpoint e;
    e.host = HostOf(id);
    Host& h = system_->hosts[e.host];
    e.gpu = id.gpu_pci.empty() ? -1 : h.FindGpu(id.gpu_pci);
    if (!id.nic.empty()) {
      e.nic = h.FindNic(id.nic);
      if (e.nic < 0 && static_cast<size_t>(e.host) >= known_hosts) {
        Nic n;
        n.name = id.nic;
        n.gbps = id.nic_gbps;
        n.rail = id.rail >= 0 ? id.rail : static_cast<int>(h.nics.size());
        h.nics.push_back(std::move(n));
        e.nic = static_cast<int>(h.nics.size()) - 1;
        grew = true;
      }
    }
    out.push_back(e);
  }
  if (grew || system_->hosts.size() != known_hosts) Resolve();
  return out;
}

std::vector<int> SystemLinks::P2P(const Endpoint& from, const Endpoint& to) const {
  absl::ReaderMutexLock lock(&mu_);
  return ToIds(resolver_->P2P(from, to));
}

std::vector<int> SystemLinks::Ring(std::span<const Endpoint> ranks) const {
  absl::ReaderMutexLock lock(&mu_);
  return ToIds(resolver_->Ring(ranks));
}

std::vector<int> SystemLinks::LocalNicLinks(const std::string& name) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<int> out;
  for (const char* dir : {"nic-tx:", "nic-rx:"}) {
    auto it = ids_.find(std::string(dir) + local_host_ + "/" + name);
    if (it != ids_.end()) out.push_back(it->second);
  }
  return out;
}

size_t SystemLinks::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return links_.size();
}

std::vector<Link> SystemLinks::LinksFrom(size_t first) const {
  absl::ReaderMutexLock lock(&mu_);
  if (first >= links_.size()) return {};
  return std::vector<Link>(links_.begin() + static_cast<std::ptrdiff_t>(first), links_.end());
}

int SystemLinks::Find(absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second;
}

System SystemLinks::system() const {
  absl::ReaderMutexLock lock(&mu_);
  return *system_;
}

}  // namespace trirace::topo
