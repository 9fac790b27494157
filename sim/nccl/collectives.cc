#include "sim/nccl/collectives.h"

#include <algorithm>
#include <unordered_map>

namespace trirace::sim {
namespace {

// Accumulates transfers per link, and who sends / receives on NIC links.
class LayoutBuilder {
 public:
  LayoutBuilder(ClusterLinks& links) : links_(links) {}

  void Hop(const std::vector<LinkIx>& path, int sender, int receiver, int transfers = 1) {
    for (LinkIx l : path) {
      auto [it, added] = index_.try_emplace(l, out_.links.size());
      if (added) out_.links.push_back({l, 0, -1});
      out_.links[it->second].transfers += transfers;
    }
    (void)sender;
    (void)receiver;
  }
  void Owner(std::vector<Layout::Owner>& side, LinkIx link, int rank) {
    for (Layout::Owner& o : side) {
      if (o.link == link && o.rank == rank) {
        ++o.transfers;
        return;
      }
    }
    side.push_back({link, rank, 1});
  }
  // A hop between hosts through chosen NICs.
  void NicHop(int ha, int na, int hb, int nb, int sender, int receiver) {
    Hop(links_.NicPath(ha, na, hb, nb), sender, receiver);
    Owner(out_.senders, links_.NicTx(ha, na), sender);
    Owner(out_.receivers, links_.NicRx(hb, nb), receiver);
    out_.crosses_hosts = true;
  }
  // A hop between ranks on their own path.
  void RankHop(int a, int b) {
    const Cluster& c = links_.cluster();
    Hop(links_.RankPath(a, b), a, b);
    if (c.HostOf(a) != c.HostOf(b)) {
      out_.crosses_hosts = true;
      const int na = c.NicOf(a), nb = c.NicOf(b);
      if (na >= 0) Owner(out_.senders, links_.NicTx(c.HostOf(a), na), a);
      if (nb >= 0) Owner(out_.receivers, links_.NicRx(c.HostOf(b), nb), b);
    }
  }
  Layout Take() {
    std::sort(out_.links.begin(), out_.links.end(),
              [](const FlowLink& x, const FlowLink& y) { return x.link < y.link; });
    return std::move(out_);
  }
  Layout& out() { return out_; }

 private:
  ClusterLinks& links_;
  Layout out_;
  std::unordered_map<LinkIx, size_t> index_;
};

// Ring collectives: channels, hosts in comm order, hops. `skip_into` /
// `skip_from`: a comm rank whose incoming (outgoing) hop is left out (the
// root of a Broadcast / Reduce); -1 none.
Layout Ring(std::span<const int> ranks, double ring_bytes, int steps, int skip_into, int skip_from,
            ClusterLinks& links) {
  const Cluster& c = links.cluster();
  LayoutBuilder b(links);
  const int n = int(ranks.size());
  // Hosts in order of first appearance, each with its members (comm ranks).
  std::vector<int> hosts;
  std::vector<std::vector<int>> members;
  for (int i = 0; i < n; ++i) {
    const int h = c.HostOf(ranks[size_t(i)]);
    auto it = std::find(hosts.begin(), hosts.end(), h);
    if (it == hosts.end()) {
      hosts.push_back(h);
      members.push_back({i});
    } else {
      members[size_t(it - hosts.begin())].push_back(i);
    }
  }
  const int H = int(hosts.size());
  // The NICs each host's members use, by rail order.
  std::vector<std::vector<int>> nics(static_cast<size_t>(H));
  int channels = 1;
  for (int h = 0; h < H; ++h) {
    for (int m : members[size_t(h)]) {
      const int nic = c.NicOf(ranks[size_t(m)]);
      if (nic >= 0 && std::find(nics[size_t(h)].begin(), nics[size_t(h)].end(), nic) == nics[size_t(h)].end()) {
        nics[size_t(h)].push_back(nic);
      }
    }
    std::sort(nics[size_t(h)].begin(), nics[size_t(h)].end());
    if (H > 1) channels = std::max(channels, int(nics[size_t(h)].size()));
  }
  std::vector<int> order;
  for (int ch = 0; ch < channels; ++ch) {
    // The channel's ring: per host, its members starting with the one on
    // the channel's NIC; the host is left through that NIC.
    order.clear();
    std::vector<int> host_nic(static_cast<size_t>(H), -1);
    std::vector<size_t> host_start(static_cast<size_t>(H));
    for (int h = 0; h < H; ++h) {
      const std::vector<int>& ms = members[size_t(h)];
      const std::vector<int>& ns = nics[size_t(h)];
      size_t first = 0;
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
      const int hf = c.HostOf(ranks[size_t(from)]), ht = c.HostOf(ranks[size_t(to)]);
      if (hf != ht) {
        const size_t hi = size_t(std::find(hosts.begin(), hosts.end(), hf) - hosts.begin());
        const size_t hj = size_t(std::find(hosts.begin(), hosts.end(), ht) - hosts.begin());
        if (host_nic[hi] >= 0 && host_nic[hj] >= 0) {
          // Sent by the member on the channel's NIC (its proxy), received by
          // the next host's first member.
          const int sender = ranks[size_t(order[host_start[hi]])];
          b.NicHop(hf, host_nic[hi], ht, host_nic[hj], sender, ranks[size_t(to)]);
          continue;
        }
      }
      b.RankHop(ranks[size_t(from)], ranks[size_t(to)]);
    }
  }
  Layout& out = b.out();
  out.bytes_per_transfer = ring_bytes / channels;
  out.steps = steps;
  return b.Take();
}

}  // namespace

int64_t Layout::LatencyNs(const Cluster& cluster) const {
  return int64_t(steps) * (crosses_hosts ? cluster.net_latency_ns : cluster.local_latency_ns);
}

double Layout::TotalBytes() const {
  double t = 0;
  for (const FlowLink& l : links) t += double(l.transfers);
  return t * bytes_per_transfer;
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
      LayoutBuilder b(links);
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          if (i == j) continue;
          if (func == NcclFunc::kGather && j != root) continue;
          if (func == NcclFunc::kScatter && i != root) continue;
          b.RankHop(ranks[size_t(i)], ranks[size_t(j)]);
        }
      }
      b.out().bytes_per_transfer = s;
      b.out().steps = 1;
      return b.Take();
    }
    case NcclFunc::kSend:
    case NcclFunc::kRecv: break;
  }
  return Layout{};
}

Layout LayoutSend(int from, int to, uint64_t bytes, ClusterLinks& links) {
  LayoutBuilder b(links);
  if (from != to) b.RankHop(from, to);
  b.out().bytes_per_transfer = double(bytes);
  b.out().steps = 1;
  Layout out = b.Take();
  if (from == to) out.crosses_hosts = false;
  return out;
}

}  // namespace trirace::sim
