#include "sim/cluster/cluster_links.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace trirace::sim {

ClusterLinks::ClusterLinks(const Cluster& cluster)
    : cluster_(cluster), resolver_(std::make_unique<topo::PathResolver>(cluster.system)) {
  const topo::System& sys = cluster.system;
  const bool has_gpus = !sys.hosts.empty() && !sys.hosts[0].gpus.empty();
  // What a leaf's hosts can send: rail-optimised leaves hold one NIC of
  // every host, two-tier leaves every NIC of hosts_per_leaf hosts.
  double leaf_down_gbps = 0;
  if (sys.fabric.kind == topo::Fabric::Kind::kRailOptimized) {
    for (const topo::Host& h : sys.hosts) leaf_down_gbps += h.nics.empty() ? 0 : h.nics[0].gbps;
  } else if (sys.fabric.kind == topo::Fabric::Kind::kTwoTier) {
    for (const topo::Nic& n : sys.hosts[0].nics) leaf_down_gbps += n.gbps;
    leaf_down_gbps *= std::max(sys.fabric.hosts_per_leaf, 1);
  }
  const double over = sys.fabric.oversubscription >= 1 ? sys.fabric.oversubscription : 1;
  for (const topo::Link& l : resolver_->links()) {
    NetLinkSpec s;
    s.name = l.name;
    double gbps = l.gbps;
    if (absl::StartsWith(l.name, "spine-")) gbps = leaf_down_gbps / over;
    if (absl::StartsWith(l.name, "shm:")) gbps = has_gpus ? 400 : 0;
    s.bytes_per_s = gbps * 1e9 / 8;
    if (absl::StartsWith(l.name, "nic-") && cluster.burst_bytes > 0) {
      s.burst_bytes = cluster.burst_bytes;
      s.line_bytes_per_s = cluster.line_gbps * 1e9 / 8;
    }
    if (absl::StartsWith(l.name, "nic-")) s.bytes_per_s *= cluster.nic_efficiency;
    // "<kind>:<host key>/<device>" or "shm:<host key>"; spine links have no host.
    int host = -1;
    const size_t colon = l.name.find(':');
    if (!absl::StartsWith(l.name, "spine-") && colon != std::string::npos) {
      const size_t slash = l.name.find('/', colon);
      host = sys.FindHost(l.name.substr(colon + 1, slash == std::string::npos ? std::string::npos : slash - colon - 1));
    }
    host_of_link_.push_back(host);
    specs_.push_back(std::move(s));
  }
  nic_tx_.resize(sys.hosts.size());
  nic_rx_.resize(sys.hosts.size());
  for (size_t h = 0; h < sys.hosts.size(); ++h) {
    for (const topo::Nic& n : sys.hosts[h].nics) {
      nic_tx_[h].push_back(resolver_->Find(absl::StrCat("nic-tx:", sys.hosts[h].key, "/", n.name)));
      nic_rx_[h].push_back(resolver_->Find(absl::StrCat("nic-rx:", sys.hosts[h].key, "/", n.name)));
    }
  }
}

LinkIx ClusterLinks::NicTx(int host, int nic) const { return nic_tx_[size_t(host)][size_t(nic)]; }
LinkIx ClusterLinks::NicRx(int host, int nic) const { return nic_rx_[size_t(host)][size_t(nic)]; }

const std::vector<LinkIx>& ClusterLinks::Cached(uint64_t key, const topo::Endpoint& a, const topo::Endpoint& b) {
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  std::vector<LinkIx>& out = cache_[key];
  for (int l : resolver_->P2P(a, b)) out.push_back(LinkIx(l));
  return out;
}

const std::vector<LinkIx>& ClusterLinks::RankPath(int a, int b) {
  const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
  return Cached(key, cluster_.EndpointOf(a), cluster_.EndpointOf(b));
}

const std::vector<LinkIx>& ClusterLinks::NicPath(int ha, int na, int hb, int nb) {
  // Bit 63 tells these from rank pairs; hosts < 2^24, NICs < 2^7.
  const uint64_t key = (uint64_t(1) << 63) | (uint64_t(ha) << 38) | (uint64_t(na) << 31) | (uint64_t(hb) << 7) |
                       uint64_t(nb);
  return Cached(key, topo::Endpoint{ha, -1, na}, topo::Endpoint{hb, -1, nb});
}

}  // namespace trirace::sim
