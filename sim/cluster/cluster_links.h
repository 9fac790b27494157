// The links of a cluster as the simulated network has them, and the paths
// between ranks over them (topology/paths.h resolves every path; this
// caches them by endpoint pair, since a run asks the same pairs again and
// again).
//
// Capacities: what the topology gives (Gbit/s per direction); the spine
// links, which the topology leaves unknown, from the fabric: a leaf's
// uplinks carry what its hosts' NICs can send divided by the
// oversubscription (rail-optimised: leaf = rail, not oversubscribed unless
// asked); host memory (shm) unlimited for processes without GPUs (the test
// bed's shared memory) and 400 Gbit/s between CPUs of a GPU server. NIC
// links carry the cluster's token bucket, if any, and its payload share
// (Cluster::nic_efficiency).
//
// Thread safety: not thread-safe (the cache).
#ifndef TRIRACE_SIM_CLUSTER_CLUSTER_LINKS_H_
#define TRIRACE_SIM_CLUSTER_CLUSTER_LINKS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cluster/cluster.h"
#include "sim/net/network.h"
#include "topology/paths.h"

namespace trirace::sim {

class ClusterLinks {
 public:
  // `cluster` must outlive this.
  explicit ClusterLinks(const Cluster& cluster);

  // Every link, in the order the Network gets them (LinkIx = index).
  const std::vector<NetLinkSpec>& specs() const { return specs_; }
  const std::string& name(LinkIx l) const { return specs_[size_t(l)].name; }

  // From rank a to rank b: their GPUs' path (or processes' NICs).
  const std::vector<LinkIx>& RankPath(int a, int b);
  // From host ha's NIC na to host hb's NIC nb (a hop between hosts through
  // chosen NICs, as a ring channel takes it).
  const std::vector<LinkIx>& NicPath(int ha, int na, int hb, int nb);
  // The send and receive side of a NIC.
  LinkIx NicTx(int host, int nic) const;
  LinkIx NicRx(int host, int nic) const;
  // The host a link belongs to (its NIC, GPU, PCIe or memory), -1 for the
  // fabric's.
  int HostOfLink(LinkIx l) const { return host_of_link_[size_t(l)]; }

  const Cluster& cluster() const { return cluster_; }

 private:
  const std::vector<LinkIx>& Cached(uint64_t key, const topo::Endpoint& a, const topo::Endpoint& b);

  const Cluster& cluster_;
  std::unique_ptr<topo::PathResolver> resolver_;
  std::vector<NetLinkSpec> specs_;
  std::vector<std::vector<LinkIx>> nic_tx_, nic_rx_;  // [host][nic]
  std::vector<int> host_of_link_;
  std::unordered_map<uint64_t, std::vector<LinkIx>> cache_;
};

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_CLUSTER_CLUSTER_LINKS_H_
