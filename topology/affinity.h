// GPU <-> NIC affinity and rail numbering, the way NCCL picks a GPU's NIC.
//
// Rails: the NICs of a host, ordered by PCI bus id (NICs without one after,
// by name), are rails 0, 1, ...: identical hosts number their NICs the same
// way, so rail r of every host is the same position in every machine.
//
// A GPU uses the NIC closest to it on the PCIe tree, in NCCL's order of path
// types: PIX (under the same PCIe switch), PXB (several switches, no CPU),
// PHB (through the host bridge of its own CPU / NUMA node), SYS (across
// CPUs). Among NICs equally close, the one fewest GPUs already use, then the
// lowest rail: so 8 GPUs over 4 equidistant NICs use each NIC twice, and the
// choice is the same on every host and every run.
//
// Restrictions (TRIRACE_NIC, NCCL_IB_HCA, NCCL_SOCKET_IFNAME) are applied by
// the caller: pass only the NICs allowed (see FilterNics).
//
// Thread safety: pure functions over the Host passed in.
#ifndef TRIRACE_TOPOLOGY_AFFINITY_H_
#define TRIRACE_TOPOLOGY_AFFINITY_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/model.h"

namespace trirace::topo {

// NCCL's path types between two PCI endpoints, closest first.
enum class PathType : uint8_t { kLoc, kPix, kPxb, kPhb, kSys };
absl::string_view PathTypeName(PathType t);

// The path type between PCI nodes `a` and `b` of `host` (indices into
// host.pci; -1 for an endpoint not in the tree, placed under the CPU of
// `numa_a` / `numa_b`).
PathType PciPathType(const Host& host, int a, int numa_a, int b, int numa_b);

// Numbers the rails and sets every GPU's `nic` (-1 when the host has no NIC).
void AssignNics(Host& host);

// NCCL-style interface / HCA list matching: "" allows all; "^a,b" excludes
// the names starting with a or b; "=a,b" allows exactly a and b; "a,b" allows
// names starting with a or b. For NCCL_IB_HCA an entry may carry ":port"
// (ignored here). True when `name` is allowed.
bool NicAllowed(absl::string_view name, absl::string_view list);

// Removes the NICs `list` does not allow, keeping GPU -> NIC indices valid
// (call before AssignNics).
void FilterNics(Host& host, absl::string_view list);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_AFFINITY_H_
