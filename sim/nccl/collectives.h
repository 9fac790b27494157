// How NCCL moves the bytes of one call, as transfers over a cluster's links
// (sim/net/network.h): the layout the simulator gives each matched call.
//
//   Ring (AllReduce, AllGather, ReduceScatter, Broadcast, Reduce): the
//   comm's ranks grouped by host in comm order; between hosts one channel
//   per NIC the host's members use (NCCL's channels over rails), each
//   channel entering and leaving every host through the same NIC (as NCCL
//   routes a ring's host crossing, PXN), inside a host from GPU to GPU
//   (NVLink, PCIe or host memory, topology/paths.h). Every ring hop of
//   every channel is one transfer; per transfer: AllReduce 2(n-1)/n of the
//   buffer, AllGather and ReduceScatter (n-1) per-rank blocks, Broadcast
//   and Reduce the buffer on every hop but the one into (out of) the root;
//   each divided among the channels. Steps (latency paid per step):
//   2(n-1), n-1, n-1.
//   AlltoAll, Gather, Scatter: one transfer per pair (rank -> peer, or
//   with the root), each of the per-peer bytes, in one step.
//   Send/Recv: one transfer from the sender to the receiver.
// The simulator runs each transfer as a flow of its own, and the call ends
// when its last transfer does: a ring's hops are decoupled by the slices
// each channel keeps in flight (NCCL's buffers, hostccl's pipeline), so a
// hop that another flow slows for a while delays the ring's end, not every
// other hop. Tree algorithms are not modelled.
//
// Thread safety: pure but for ClusterLinks' path cache.
#ifndef TRIRACE_SIM_NCCL_COLLECTIVES_H_
#define TRIRACE_SIM_NCCL_COLLECTIVES_H_

#include <cstdint>
#include <span>
#include <vector>

#include "common/nccl_func.h"
#include "sim/cluster/cluster_links.h"

namespace trirace::sim {

struct Layout {
  struct Transfer {
    const std::vector<LinkIx>* path = nullptr;  // ClusterLinks' (stable)
    int sender = -1, receiver = -1;             // global ranks whose processes send / receive it
    LinkIx nic_tx = -1, nic_rx = -1;            // the NIC sides it crosses between hosts, -1 inside one
  };
  std::vector<Transfer> transfers;
  double bytes_per_transfer = 0;
  int steps = 1;
  bool crosses_hosts = false;

  // Latency of the whole call on `cluster`.
  int64_t LatencyNs(const Cluster& cluster) const;
  // Every link a transfer crosses, once each, sorted.
  std::vector<LinkIx> Links() const;
};

// The layout of `func` over `ranks` (global ranks by comm rank) moving
// `bytes` (NcclCall::bytes' meaning); `root` is the comm rank of a rooted
// call's root.
Layout LayoutCollective(NcclFunc func, std::span<const int> ranks, uint64_t bytes, int root, ClusterLinks& links);
// One message from global rank `from` to `to`.
Layout LayoutSend(int from, int to, uint64_t bytes, ClusterLinks& links);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_NCCL_COLLECTIVES_H_
