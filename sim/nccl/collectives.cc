#include "sim/nccl/collectives.h"

#include <algorithm>

namespace trirace::sim {
namespace {

// A transfer between ranks on their own path.
Layout::Transfer RankHop(int a, int b, ClusterLinks& links) {
  const Cluster& c = links.cluster();
  Layout::Transfer t;
  t.path = &links.RankPath(a, b);
  t.sender = a;
  t.receiver = b;
  if (c.HostOf(a) != c.HostOf(b)) {
    if (const int na = c.NicOf(a); na >= 0) t.nic_tx = links.NicTx(c.HostOf(a), na);
    if (const int nb = c.NicOf(b); nb >= 0) t.nic_rx = links.NicRx(c.HostOf(b), nb);
  }
  return t;
}

// Ring collectives: channels, hosts in comm order, hops. `skip_into` /
// `skip_from`: a comm rank whose incoming (outgoing) hop is left out (the
// root of a Broadcast / Reduce); -1 none.
Layout Ring(std::span<const int> ranks, double ring_bytes, int steps, int skip_into, int skip_from,
            ClusterLinks& links) {
  const Cluster& c = links.cluster();
  Layout out;
  const int n = int(ranks.size());
  // Hosts in order of first appearance, each with its members (comm ranks).
  std::vector<int> hosts;
  std::vector<std::vector<int>> members;
  std::vector<int> host_index(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int h = c.HostOf(ranks[size_t(i)]);
    // Launchers place a comm's ranks of one host together: look back first.
    int at = !hosts.empty() && hosts.back() == h ? int(hosts.size()) - 1 : -1;
    if (at < 0) at = int(std::find(hosts.begin(), hosts.end(), h) - hosts.begin());
    if (at == int(hosts.size())) {
      hosts.push_back(h);
      members.emplace_back();
    }
    members[size_t(at)].push_back(i);
    host_index[size_t(i)] = at;
  }
  const int H = int(hosts.size());
  // The NICs each host's members use, by rail order.
  std::vector<std::vector<int>> nics(static_cast<size_t>(H));
  int channels = 1;
  for (int h = 0; h < H; ++h) {
    std::vector<int>& ns = nics[size_t(h)];
    for (int m : members[size_t(h)]) {
      const int nic = c.NicOf(ranks[size_t(m)]);
      if (nic >= 0 && std::find(ns.begin(), ns.end(), nic) == ns.end()) ns.push_back(nic);
    }
    std::sort(ns.begin(), ns.end());
    if (H > 1) channels = std::max(channels, int(ns.size()));
  }
  std::vector<int> order;
  std::vector<int> host_nic(static_cast<size_t>(H), -1);
  std::vector<size_t> host_start(static_cast<size_t>(H));
  for (int ch = 0; ch < channels; ++ch) {
    // The channel's ring: per host, its members starting with the one on
    // the channel's NIC; the host is left through that NIC.
    order.clear();
    for (int h = 0; h < H; ++h) {
      const std::vector<int>& ms = members[size_t(h)];
      const std::vector<int>& ns = nics[size_t(h)];
      size_t first = 0;
      host_nic[size_t(h)] = -1;
      if (!ns.empty()) {
        host_nic[size_t(h)] = ns[size_t(ch) % ns.size()];
        for (size_t k = 0; k < ms.size(); ++k) {
          if (c.NicOf(ranks[size_t(ms[k])]) == host_nic[size_t(h)]) {
            first = k;
            break;
          }
        }
      }
      host_start[size_t(h)] = order.size();
      for (size_t k = 0; k < ms.size(); ++k) order.push_back(ms[(first + k) % ms.size()]);
    }
    const int len = int(order.size());
    for (int i = 0; i < len; ++i) {
      const int from = order[size_t(i)], to = order[size_t((i + 1) % len)];
      if (from == to || to == skip_into || from == skip_from) continue;
      const size_t hi = size_t(host_index[size_t(from)]), hj = size_t(host_index[size_t(to)]);
      if (hi != hj && host_nic[hi] >= 0 && host_nic[hj] >= 0) {
        // Between hosts through the channel's NICs: sent by the member on
        // the channel's NIC (its proxy), received by the next host's first.
        Layout::Transfer t;
        t.path = &links.NicPath(hosts[hi], host_nic[hi], hosts[hj], host_nic[hj]);
        t.sender = ranks[size_t(order[host_start[hi]])];
        t.receiver = ranks[size_t(to)];
        t.nic_tx = links.NicTx(hosts[hi], host_nic[hi]);
        t.nic_rx = links.NicRx(hosts[hj], host_nic[hj]);
        out.transfers.push_back(t);
        out.crosses_hosts = true;
        continue;
      }
      out.transfers.push_back(RankHop(ranks[size_t(from)], ranks[size_t(to)], links));
      out.crosses_hosts = out.crosses_hosts || hi != hj;
    }
  }
  out.bytes_per_transfer = ring_bytes / channels;
  out.steps = steps;
  return out;
}

}  // namespace

int64_t Layout::LatencyNs(const Cluster& cluster) const {
  return int64_t(steps) * (crosses_hosts ? cluster.net_latency_ns : cluster.local_latency_ns);
}

std::vector<LinkIx> Layout::Links() const {
  std::vector<LinkIx> out;
  for (const Transfer& t : transfers) out.insert(out.end(), t.path->begin(), t.path->end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Layout LayoutCollective(NcclFunc func, std::span<const int> ranks, uint64_t bytes, int root, ClusterLinks& links) {
  const int n = int(ranks.size());
  const double s = double(bytes);
  if (n <= 1 || bytes == 0) return Layout{};
  root = std::clamp(root, 0, n - 1);
  switch (func) {
    case NcclFunc::kAllReduce: return Ring(ranks, 2.0 * (n - 1) / n * s, 2 * (n - 1), -1, -1, links);
    case NcclFunc::kAllGather:
    case NcclFunc::kReduceScatter: return Ring(ranks, double(n - 1) * s, n - 1, -1, -1, links);
    case NcclFunc::kBroadcast:
    case NcclFunc::kBcast: return Ring(ranks, s, n - 1, root, -1, links);
    case NcclFunc::kReduce: return Ring(ranks, s, n - 1, -1, root, links);
    case NcclFunc::kAlltoAll:
    case NcclFunc::kGather:
    case NcclFunc::kScatter: {
      Layout out;
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          if (i == j) continue;
          if (func == NcclFunc::kGather && j != root) continue;
          if (func == NcclFunc::kScatter && i != root) continue;
          out.transfers.push_back(RankHop(ranks[size_t(i)], ranks[size_t(j)], links));
          out.crosses_hosts = out.crosses_hosts || out.transfers.back().nic_tx >= 0 ||
                              links.cluster().HostOf(ranks[size_t(i)]) != links.cluster().HostOf(ranks[size_t(j)]);
        }
      }
      out.bytes_per_transfer = s;
      out.steps = 1;
      return out;
    }
    case NcclFunc::kSend:
    case NcclFunc::kRecv: break;
  }
  return Layout{};
}

Layout LayoutSend(int from, int to, uint64_t bytes, ClusterLinks& links) {
  Layout out;
  if (from != to) {
    out.transfers.push_back(RankHop(from, to, links));
    out.crosses_hosts = links.cluster().HostOf(from) != links.cluster().HostOf(to);
  }
  out.bytes_per_transfer = double(bytes);
  out.steps = 1;
  return out;
}

}  // namespace trirace::sim
