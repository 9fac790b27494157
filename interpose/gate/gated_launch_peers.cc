// The peer exchange under the gated launch (peer_exchange.h): which comms
// are exchanged when they become usable, and what their peers resolve to.
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/params.h"
#include "interpose/comm/comm_state.h"
#include "interpose/gate/chunk_agreement.h"
#include "interpose/gate/gated_launcher.h"
#include "interpose/network/front_stage.h"
#include "scheduler/chunk_planner.h"

namespace trirace::interpose {
namespace {

// The comm's GPU bus id, "" without one (host streams) or when unknown.
std::string BusIdOf(device::Device& dev, const CommState& s) {
  if (s.device < 0) return "";
  absl::StatusOr<std::string> bus = dev.PciBusId(s.device);
  return bus.ok() ? *bus : "";
}

}  // namespace

topo::PeerIdentity GatedLauncher::LocalIdentity(const CommState& s) {
  topo::PeerIdentity me = links_->LocalIdentity(BusIdOf(dev_, s));
  me.class_priority = NetClassPriorityEnabled();
  me.chunk = chunk_settings_;
  return me;
}

void GatedLauncher::NoteHostPlace(CommState& state) {
  if (state.host_place_noted.load(std::memory_order_relaxed)) return;
  const CommPeers* p = state.peers.load(std::memory_order_acquire);
  bool annotated = false;
  const int role = EffectiveRole(state, &annotated);
  // Never a decision for this comm: no records (exchange off or failed), or
  // declared something other than a pipeline.
  if ((p == nullptr && state.exchanged.HasBeenNotified()) || (annotated && role != TRIRACE_ROLE_PIPELINE)) {
    state.host_place_noted.store(true, std::memory_order_relaxed);
    return;
  }
  // Not yet: no records, or no pipeline role. An inferred role (only
  // send/recv so far) is trusted only across hosts: an all-to-all made of
  // grouped sends inside one host looks the same.
  if (p == nullptr || role != TRIRACE_ROLE_PIPELINE || (!annotated && p->hosts < 2)) return;
  if (state.host_place_noted.exchange(true)) return;
  const HostPlace place = PlaceOnHost(p->ranks, state.rank);
  if (place == HostPlace::kAlone) return;  // nothing on its uplink to go ahead of
  NoteDenseAhead(place);  // after this, DenseAhead() or DenseBehind()
  const bool marks = NetClassPriorityEnabled();
  TRIRACE_INFO(TOPO, "comm %d id %s (pipeline%s): rank %d holds %s stage of host %s; this process's DENSE now %s "
               "([R14], TRIRACE_FRONT_STAGE_FIRST)", state.index, CommIdHex(state.id), annotated ? "" : ", inferred",
               state.rank, place == HostPlace::kFront ? "the front" : "a later", p->ranks[state.rank].host,
               DenseAhead() ? (marks ? "goes ahead of the host's other DENSE (SPARSE's marks)"
                                     : "goes first: the host's later stages yield to it")
                            : (marks ? "stays in DENSE's band"
                                     : "yields to the other processes' DENSE on its NIC ([R13]'s gauge)"));
}

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
      ranks[s->rank] = LocalIdentity(*s);
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
  std::vector<CommState*> started_comms;
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
    const topo::PeerIdentity me = LocalIdentity(*s);
    ncclResult_t result = ncclSuccess;
    absl::Status started;
    {
      absl::MutexLock lock(&lane->mu);
      started = exchange_->Start(*s, me, lane->stream(), &result);
    }
    if (!started.ok()) {
      TRIRACE_WARN(TOPO, "comm %d: peer exchange not issued: %s; its ops are charged this host's NIC", s->index,
                   started.ToString());
    } else {
      started_comms.push_back(s);
    }
  }
  if (grouped && real_.GroupEnd() != ncclSuccess) {
    TRIRACE_WARN(TOPO, "peer exchange: ncclGroupEnd failed; %d new comm(s) keep this host's NIC", todo.size());
    return;
  }
  // The comm's chunk size comes from the records: wait for them before the
  // application can issue its first operation. Every rank of the comm
  // issued its all-gather on returning from the same creating call, so this
  // waits as long as comm creation itself did, unless a rank never issued
  // its part (peer_exchange.h: the one local failure), which the log names.
  for (CommState* s : started_comms) {
    for (int waited_s = 10; !s->exchanged.WaitForNotificationWithTimeout(absl::Seconds(10)); waited_s += 10) {
      TRIRACE_WARN(TOPO, "comm %d id %s: still waiting for the peer exchange after %d s: a rank of the comm has not "
                   "issued it (every rank must finish creating the comm)", s->index, CommIdHex(s->id), waited_s);
    }
  }
}

void GatedLauncher::PeersKnown(CommState& state, absl::StatusOr<std::vector<topo::PeerIdentity>> ranks) {
  if (!ranks.ok()) {
    TRIRACE_WARN(TOPO, "comm %d id %s: peer exchange failed: %s; its ops are charged this host's NIC", state.index,
                 CommIdHex(state.id), ranks.status().ToString());
    if (!state.exchanged.HasBeenNotified()) state.exchanged.Notify();
    return;
  }
  const CommPeers* p = links_->Publish(state, state.rank, *std::move(ranks), *engine_);
  // The chunk plan from the records alone: the same on every rank.
  const AgreedChunks agreed = AgreeChunks(p->ranks, p->hosts);
  if (!agreed.differs.empty()) {
    static constexpr char kWhat[] = "comm %d id %s: the ranks' chunk settings differ (%s); every rank splits this "
                                    "comm's collectives by rank 0's, so their NCCL calls still match; set them alike "
                                    "on every rank%s";
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      TRIRACE_WARN(TOPO, kWhat, state.index, CommIdHex(state.id), agreed.differs, " (later comms say it at INFO)");
    } else {
      TRIRACE_INFO(TOPO, kWhat, state.index, CommIdHex(state.id), agreed.differs, "");
    }
  }
  state.chunk_float_reductions.store(agreed.settings.float_reductions, std::memory_order_relaxed);
  const uint64_t chunk = agreed.bytes;
  uint64_t unset = CommState::kChunkBytesUnset;
  state.chunk_bytes.compare_exchange_strong(unset, chunk, std::memory_order_acq_rel);
  if (!state.exchanged.HasBeenNotified()) state.exchanged.Notify();
  std::vector<std::string> hosts, nics;
  for (const topo::PeerIdentity& id : p->ranks) {
    hosts.push_back(id.host);
    nics.push_back(id.nic.empty() ? "-" : id.nic);
  }
  TRIRACE_INFO(TOPO, "comm %d id %s: peers of rank %d: hosts [%s], nics [%s]; %d host(s), a collective crosses %d "
               "link(s); chunks of %d bytes (slowest NIC %.3g Gbit/s%s)", state.index, CommIdHex(state.id), state.rank,
               absl::StrJoin(hosts, " "), absl::StrJoin(nics, " "), p->hosts, p->ring.size(), chunk, agreed.slowest_gbps,
               agreed.every_class_priority ? "; class priority on every rank" : "");
}

}  // namespace trirace::interpose
