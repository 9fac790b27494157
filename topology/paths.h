// The path resolver: which links an operation crosses, on a System.
//
// Links (one per direction where traffic in the two directions does not
// compete):
//   nic-tx:<host>/<nic>, nic-rx:<host>/<nic>   a NIC port's send / receive side
//   nvl-tx:<host>/<gpu>, nvl-rx:<host>/<gpu>   a GPU's NVLink egress / ingress
//   pcie-up:<host>/<busid>, pcie-down:<host>/<busid>   a PCIe node's link to its parent
//   shm:<host>                                 host memory, for peers on one host
//                                              with neither NVLink nor a PCIe path
//   spine-up:leaf<l>, spine-down:leaf<l>       fabric uplinks of leaf l
//                                              (rail-optimised: leaf = rail;
//                                              two-tier: leaf = host / hosts_per_leaf)
//
// Rules, for data sent from endpoint A to endpoint B:
//   - same GPU: nothing;
//   - same host, NVLink between them (a direct link, or both on an NVSwitch):
//     nvl-tx of A, nvl-rx of B;
//   - same host otherwise: the PCIe links from A up to the closest common
//     switch and down to B when both are in the tree, else shm;
//   - different hosts: nic-tx of A's NIC, nic-rx of B's NIC, and the spine
//     links when the fabric routes between leaves (rail-optimised: the NICs'
//     rails differ; two-tier: the hosts' leaves differ). The PCIe hop between
//     a GPU and its NIC is not modelled (GPUDirect RDMA on a shared switch).
// A collective over ranks r0..rn-1 (in the comm's rank order) crosses the
// links of every ring step r_i -> r_(i+1 mod n). NCCL may order its rings
// differently (it searches for the fastest); the rank-order ring is an
// approximation that charges the same hosts and NICs when each host's ranks
// are contiguous, which is how launchers place them.
//
// Thread safety: const methods are safe from several threads.
#ifndef TRIRACE_TOPOLOGY_PATHS_H_
#define TRIRACE_TOPOLOGY_PATHS_H_

#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "topology/model.h"

namespace trirace::topo {

// One end of a transfer: a GPU of a host, or (gpu = -1) a process without a
// GPU, which uses `nic` (-1: rail 0).
struct Endpoint {
  int host = 0;
  int gpu = -1;
  int nic = -1;
};

struct Link {
  std::string name;
  double gbps = 0;  // per direction; 0: unknown
};

class PathResolver {
 public:
  // `system` must outlive the resolver; run AssignNics on its hosts first.
  explicit PathResolver(const System& system);

  // Every link of the system, by index. Stable for the resolver's life.
  const std::vector<Link>& links() const { return links_; }
  // The index of the link named `name`, or -1.
  int Find(absl::string_view name) const;

  // The links data from `from` to `to` crosses (indices, no duplicates, in
  // path order).
  std::vector<int> P2P(const Endpoint& from, const Endpoint& to) const;
  // The links of a ring over `ranks` (see the header comment), sorted.
  std::vector<int> Ring(std::span<const Endpoint> ranks) const;

  // The NIC `e` sends through (index in its host's nics), or -1.
  int NicOf(const Endpoint& e) const;

 private:
  int Add(std::string name, double gbps);
  void Append(std::vector<int>& out, absl::string_view name) const;
  int LeafOf(int host, int nic) const;

  const System& system_;
  std::vector<Link> links_;
  absl::flat_hash_map<std::string, int> by_name_;
};

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_PATHS_H_
