#include "interpose/front_stage.h"

#include <atomic>

namespace trirace::interpose {
namespace {

enum ProcessPlace : int {
  kNothingNoted = 0,
  kFrontOnEvery = 1,  // front on every pipeline comm noted so far
  kBehindOnOne = 2,   // behind on at least one: final
};
std::atomic<int> g_place{kNothingNoted};

// Whether two ranks send through one uplink: the same host, and the same
// NIC where both know theirs (ranks on different rails do not compete).
bool ShareUplink(const topo::PeerIdentity& a, const topo::PeerIdentity& b) {
  return a.host == b.host && (a.nic.empty() || b.nic.empty() || a.nic == b.nic);
}

}  // namespace

absl::string_view HostPlaceName(HostPlace place) {
  switch (place) {
    case HostPlace::kAlone: return "alone";
    case HostPlace::kFront: return "front";
    case HostPlace::kBehind: return "behind";
  }
  return "?";
}

HostPlace PlaceOnHost(std::span<const topo::PeerIdentity> ranks, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks.size()) return HostPlace::kAlone;
  bool shared = false;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (static_cast<int>(r) == rank || !ShareUplink(ranks[r], ranks[rank])) continue;
    if (static_cast<int>(r) < rank) return HostPlace::kBehind;
    shared = true;
  }
  return shared ? HostPlace::kFront : HostPlace::kAlone;
}

void NoteDenseAhead(HostPlace place) {
  if (place == HostPlace::kBehind) {
    g_place.store(kBehindOnOne, std::memory_order_relaxed);
  } else if (place == HostPlace::kFront) {
    int nothing = kNothingNoted;
    g_place.compare_exchange_strong(nothing, kFrontOnEvery, std::memory_order_relaxed);
  }
}
bool DenseAhead() { return g_place.load(std::memory_order_relaxed) == kFrontOnEvery; }
bool DenseBehind() { return g_place.load(std::memory_order_relaxed) == kBehindOnOne; }
void ResetDenseAheadForTest() { g_place.store(kNothingNoted, std::memory_order_relaxed); }

}  // namespace trirace::interpose
