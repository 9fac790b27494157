// Where a rank stands on its uplink among the ranks of one comm: rule
// [R14]'s question (interpose/network/front_stage.h says why the front-most
// pipeline stage's DENSE goes first). Pure: the shim asks it of a pipeline
// comm's exchanged identities, the simulator of its placed ranks.
//
//   HostPlace p = PlaceOnHost(identities_by_comm_rank, my_comm_rank);
//
// Two ranks share an uplink when they are on one host and, where both know
// their NIC, on the same NIC (ranks on different rails do not compete).
//
// Thread safety: pure functions.
#ifndef TRIRACE_TOPOLOGY_UPLINK_PLACE_H_
#define TRIRACE_TOPOLOGY_UPLINK_PLACE_H_

#include <span>

#include "absl/strings/string_view.h"
#include "topology/peer_identity.h"

namespace trirace::topo {

enum class HostPlace {
  kAlone,   // no other rank of the comm on its uplink (or `rank` out of range)
  kFront,   // the lowest comm rank among two or more on its uplink
  kBehind,  // another rank of the comm on its uplink has a lower comm rank
};
absl::string_view HostPlaceName(HostPlace place);  // "alone", "front", "behind"

// True when a and b send through one uplink.
bool ShareUplink(const PeerIdentity& a, const PeerIdentity& b);

// Where comm rank `rank` stands among the ranks of `ranks` (by comm rank)
// that share its uplink.
HostPlace PlaceOnHost(std::span<const PeerIdentity> ranks, int rank);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_UPLINK_PLACE_H_
