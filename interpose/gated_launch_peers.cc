// The peer exchange under the gated launch (peer_exchange.h): which comms
// are exchanged when they become usable, and what their peers resolve to.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "interpose/comm_state.h"
#include "interpose/gated_launcher.h"

namespace trirace::interpose {
namespace {

// The comm's GPU bus id, "" without one (host streams) or when unknown.
std::string BusIdOf(device::Device& dev, const CommState& s) {
  if (s.device < 0) return "";
  absl::StatusOr<std::string> bus = dev.PciBusId(s.device);
  return bus.ok() ? *bus : "";
}

}  // namespace

void GatedLauncher::CommsReady(std::span<CommState* const> states) {
  std::vector<CommState*> todo;
  for (CommState* s : states) {
    if (s != nullptr && s->comm != nullptr && !s->nonblocking && s->nranks > 1) todo.push_back(s);
  }
  if (todo.empty()) return;
  if (todo.front()->created_by == "CommInitAll") {
    // Every rank of these comms is in this process: nothing to exchange.
    std::vector<topo::PeerIdentity> ranks(todo.size());
    for (CommState* s : todo) {
      if (s->rank < 0 || s->rank >= static_cast<int>(ranks.size())) return;
      ranks[s->rank] = links_->LocalIdentity(BusIdOf(dev_, *s));
    }
    for (CommState* s : todo) PeersKnown(*s, ranks);
    return;
  }
  if (exchange_ == nullptr) return;
  // Several comms at once come from one thread driving several devices:
  // one real group, or the first all-gather would wait for the others.
  const bool grouped = todo.size() > 1 && real_.GroupStart != nullptr && real_.GroupEnd != nullptr;
  if (grouped && real_.GroupStart() != ncclSuccess) {
    TRIRACE_WARN(TOPO, "peer exchange: ncclGroupStart failed; %d new comm(s) not exchanged", todo.size());
    return;
  }
  for (CommState* s : todo) {
    absl::StatusOr<device::CurrentDevice> current = dev_.MakeCurrent(s->device);
    if (!current.ok()) {
      TRIRACE_WARN(TOPO, "comm %d: peer exchange: cannot use device %d: %s", s->index, s->device,
                   current.status().ToString());
      continue;
    }
    CommLane* lane = LaneFor(s);
    if (lane == nullptr) {
      TRIRACE_WARN(TOPO, "comm %d: peer exchange not issued (no dedicated stream); the comm's other ranks wait for "
                   "it in their first operation", s->index);
      continue;
    }
    const topo::PeerIdentity me = links_->LocalIdentity(BusIdOf(dev_, *s));
    ncclResult_t result = ncclSuccess;
    absl::Status started;
    {
      absl::MutexLock lock(&lane->mu);
      started = exchange_->Start(*s, me, lane->stream(), &result);
    }
    if (!started.ok()) {
      TRIRACE_WARN(TOPO, "comm %d: peer exchange not issued: %s; its ops are charged this host's NIC", s->index,
                   started.ToString());
    }
  }
  if (grouped && real_.GroupEnd() != ncclSuccess) {
    TRIRACE_WARN(TOPO, "peer exchange: ncclGroupEnd failed; %d new comm(s) keep this host's NIC", todo.size());
  }
}

void GatedLauncher::PeersKnown(CommState& state, absl::StatusOr<std::vector<topo::PeerIdentity>> ranks) {
  if (!ranks.ok()) {
    TRIRACE_WARN(TOPO, "comm %d id %s: peer exchange failed: %s; its ops are charged this host's NIC", state.index,
                 CommIdHex(state.id), ranks.status().ToString());
    return;
  }
  const CommPeers* p = links_->Publish(state, state.rank, *std::move(ranks), *engine_);
  std::vector<std::string> hosts, nics;
  for (const topo::PeerIdentity& id : p->ranks) {
    hosts.push_back(id.host);
    nics.push_back(id.nic.empty() ? "-" : id.nic);
  }
  TRIRACE_INFO(TOPO, "comm %d id %s: peers of rank %d: hosts [%s], nics [%s]; %d host(s), a collective crosses %d "
               "link(s)", state.index, CommIdHex(state.id), state.rank, absl::StrJoin(hosts, " "),
               absl::StrJoin(nics, " "), p->hosts, p->ring.size());
}

}  // namespace trirace::interpose
