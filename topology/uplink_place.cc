#include "topology/uplink_place.h"

namespace trirace::topo {

absl::string_view HostPlaceName(HostPlace place) {
  switch (place) {
    case HostPlace::kAlone: return "alone";
    case HostPlace::kFront: return "front";
    case HostPlace::kBehind: return "behind";
  }
  return "?";
}

bool ShareUplink(const PeerIdentity& a, const PeerIdentity& b) {
  return a.host == b.host && (a.nic.empty() || b.nic.empty() || a.nic == b.nic);
}

HostPlace PlaceOnHost(std::span<const PeerIdentity> ranks, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks.size()) return HostPlace::kAlone;
  bool shared = false;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (static_cast<int>(r) == rank || !ShareUplink(ranks[r], ranks[rank])) continue;
    if (static_cast<int>(r) < rank) return HostPlace::kBehind;
    shared = true;
  }
  return shared ? HostPlace::kFront : HostPlace::kAlone;
}

}  // namespace trirace::topo
