// The shim's gated launch in simulated time (simulation.h says what it
// models): one real sched::Engine per rank, gates, chunks, and the
// occupancy reader over the simulated links.
#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/link_counters.h"
#include "common/params.h"
#include "scheduler/chunk_planner.h"
#include "scheduler/policy_factory.h"
#include "sim/run/simulation_state.h"
#include "topology/uplink_place.h"

namespace trirace::sim::internal {

void RankGates::OpenGate(const sched::ReleasedTask& task) { sim_->GateOpened(rank_, task); }

Simulation::~Simulation() { StopEngines(); }

void Simulation::StopEngines() {
  for (RankRun& r : ranks_) {
    if (r.engine != nullptr) r.engine->Stop();
  }
}

void Simulation::GateOpened(int rank, const sched::ReleasedTask& task) {
  RankRun& r = ranks_[size_t(rank)];
  if (task.cookie < r.gates.size()) {
    Gate& g = r.gates[size_t(task.cookie)];
    g.open = true;
    g.open_ns = now_;
    g.reason = task.reason;
  }
  ++release_reasons_[size_t(task.reason)];
  if (task.reason == sched::ReleaseReason::kMaxHold && hold_waits_.size() < 100000) {
    hold_waits_.push_back(task.release_ns - task.enqueue_ns);
  }
  MarkDirty(rank);
}

// What the net plugin's segment tells a rank's engine about its NIC: the
// bytes each direction carried, this rank's own, and what the other
// processes on the NIC have posted to send as P2P or SPARSE (and, for a
// rank behind another pipeline stage on its uplink without class marks,
// their DENSE too: [R14] through [R13]'s gauge).
class SimOccupancyReader final : public OccupancyReader {
 public:
  SimOccupancyReader(Simulation* sim, int rank, std::string device, LinkIx tx, LinkIx rx)
      : sim_(sim), rank_(rank), device_(std::move(device)), tx_(tx), rx_(rx) {}
  std::string_view name() const override { return "simulated"; }
  absl::StatusOr<OccupancySnapshot> Read() override {
    OccupancySnapshot snap;
    snap.time_ns = sim_->now_;
    DeviceCounters d;
    d.device = device_;
    d.tx_bytes = uint64_t(sim_->net_.LinkBytes(tx_));
    d.rx_bytes = uint64_t(sim_->net_.LinkBytes(rx_));
    const RankRun& r = sim_->ranks_[size_t(rank_)];
    d.has_ours = true;
    d.ours_tx_bytes = uint64_t(sim_->net_.CounterBytes(r.tx_counter));
    d.ours_rx_bytes = uint64_t(sim_->net_.CounterBytes(r.rx_counter));
    d.others_urgent_send_bytes = sim_->UrgentBytesBeside(rank_);
    snap.devices.push_back(std::move(d));
    return snap;
  }

 private:
  Simulation* sim_;
  int rank_;
  std::string device_;
  LinkIx tx_, rx_;
};

int64_t Simulation::UrgentBytesBeside(int rank) const {
  int64_t bytes = 0;
  const bool behind = mode_.front_stage_gauge && ranks_[size_t(rank)].dense_behind;
  for (int o : ranks_on_nic_[size_t(rank)]) {
    const std::array<int64_t, kNumTrafficClasses>& g = urgent_[size_t(o)];
    bytes += g[size_t(ClassIndex(TrafficClass::kP2P))] + g[size_t(ClassIndex(TrafficClass::kSparse))];
    if (behind) bytes += g[size_t(ClassIndex(TrafficClass::kDense))];
  }
  return std::max<int64_t>(bytes, 0);
}

sched::LinkId Simulation::EngineLink(int rank, LinkIx link) {
  RankRun& r = ranks_[size_t(rank)];
  auto it = r.engine_link.find(link);
  if (it != r.engine_link.end()) return it->second;
  const NetLinkSpec& spec = links_.specs()[size_t(link)];
  const sched::LinkId id = r.engine->AddLink({spec.name, spec.bytes_per_s});
  r.engine_link.emplace(link, id);
  return id;
}

void Simulation::PlaceFrontStages() {
  // [R14]: where each rank stands on its uplink among its pipeline comms'
  // ranks (topology/uplink_place.h), as the launcher notes it.
  for (const CommSpec& comm : w_.comms) {
    if (!comm.pipeline) continue;
    std::vector<topo::PeerIdentity> ids;
    std::vector<int> hosts;
    for (int g : comm.ranks) {
      topo::PeerIdentity id;
      id.host = cluster_.system.hosts[size_t(cluster_.HostOf(g))].key;
      const int nic = cluster_.NicOf(g);
      if (nic >= 0) id.nic = cluster_.system.hosts[size_t(cluster_.HostOf(g))].nics[size_t(nic)].name;
      ids.push_back(std::move(id));
      if (std::find(hosts.begin(), hosts.end(), cluster_.HostOf(g)) == hosts.end()) hosts.push_back(cluster_.HostOf(g));
    }
    if (hosts.size() < 2) continue;  // an inferred pipeline counts only across hosts
    for (size_t i = 0; i < comm.ranks.size(); ++i) {
      RankRun& r = ranks_[size_t(comm.ranks[i])];
      switch (topo::PlaceOnHost(ids, int(i))) {
        case topo::HostPlace::kBehind:
          r.dense_behind = true;
          r.dense_ahead = false;
          break;
        case topo::HostPlace::kFront:
          if (!r.dense_behind) r.dense_ahead = true;
          break;
        case topo::HostPlace::kAlone: break;
      }
    }
  }
}

void Simulation::SetUpGating() {
  const int n = int(ranks_.size());
  float_reductions_ = ParamChoice<ChunkFloatReductions>() == ChunkFloatReductions::kOn;
  sched::EngineOptions base = sched::EngineOptionsFor(mode_.policy, sched::EngineOptions::FromParams());
  base.clock = &clock_;
  base.start_thread = false;
  sched::PolicyOverrides overrides;
  overrides.wire_class_priority = mode_.class_marks;
  for (int rank = 0; rank < n; ++rank) {
    RankRun& r = ranks_[size_t(rank)];
    r.opener = std::make_unique<RankGates>(this, rank);
    r.engine = std::make_unique<sched::Engine>(sched::MakePolicy(mode_.policy, overrides), r.opener.get(), base);
    const int nic = cluster_.NicOf(rank);
    if (nic < 0 || rank >= cluster_.ranks()) continue;
    const int host = cluster_.HostOf(rank);
    const LinkIx tx = links_.NicTx(host, nic), rx = links_.NicRx(host, nic);
    std::vector<std::pair<std::string, sched::LinkId>> devices;
    const std::string& device = cluster_.system.hosts[size_t(host)].nics[size_t(nic)].name;
    devices.push_back({device, EngineLink(rank, tx)});
    devices.push_back({device, EngineLink(rank, rx)});
    r.engine->SetOccupancyReader(std::make_unique<SimOccupancyReader>(this, rank, device, tx, rx), std::move(devices));
  }
}

const std::vector<LinkIx>& Simulation::CommLinks(int comm, NcclFunc func, int root, int host) {
  // comm and root < 2^22, host < 2^16, func < 2^4.
  const uint64_t key = (uint64_t(uint32_t(comm)) << 42) | (uint64_t(uint32_t(root)) << 20) |
                       (uint64_t(uint32_t(host)) << 4) | uint64_t(func);
  auto it = comm_links_.find(key);
  if (it != comm_links_.end()) return it->second;
  std::vector<LinkIx>& out = comm_links_[key];
  // The links the call's flows cross (bytes do not change them) on the
  // rank's own host and in the fabric. The shim charges the whole ring;
  // the links of the other hosts would hold only this same rank's tasks of
  // the comm, which all cross the whole ring, so on a cluster of like NICs
  // they never bind where the rank's own links do not: leaving them out
  // changes no decision and keeps each engine's link table the size of a
  // host, not of the cluster.
  const Layout layout = LayoutCollective(func, w_.comms[size_t(comm)].ranks, 1 << 20, root, links_);
  for (LinkIx l : layout.Links()) {
    const int h = links_.HostOfLink(l);
    if (h < 0 || h == host) out.push_back(l);
  }
  return out;
}

uint64_t Simulation::ChunkBytesOf(int comm) {
  auto it = chunk_bytes_.find(comm);
  if (it != chunk_bytes_.end()) return it->second;
  // As the launcher agrees it at comm creation: wire time on the slowest
  // NIC of the comm's ranks, no split across hosts where every rank marks
  // classes on the wire.
  std::vector<int> hosts;
  double slowest = 0;
  for (int g : w_.comms[size_t(comm)].ranks) {
    const int h = cluster_.HostOf(g);
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
    const double rate = cluster_.NicBytesPerS(g);
    if (rate > 0 && (slowest == 0 || rate < slowest)) slowest = rate;
  }
  const uint64_t bytes = sched::CommChunkBytes(uint64_t(ParamInt(ParamId::kChunkBytes)),
                                               ParamInt(ParamId::kChunkUs) * 1000,
                                               uint64_t(ParamInt(ParamId::kChunkMinBytes)), int(hosts.size()),
                                               slowest, mode_.class_marks);
  chunk_bytes_.emplace(comm, bytes);
  return bytes;
}

sched::TaskSpec Simulation::TaskFor(int rank, const NcclCall& call, uint64_t bytes, TrafficClass cls) {
  sched::TaskSpec spec;
  spec.comm = sched::CommId(call.comm) + 1;
  spec.traffic_class = cls;
  spec.bytes = bytes;
  spec.tag = call.tag;
  std::vector<LinkIx> path;
  if (IsPointToPoint(call.func)) {
    const int peer = w_.comms[size_t(call.comm)].ranks[size_t(call.peer)];
    path = call.func == NcclFunc::kSend ? links_.RankPath(rank, peer) : links_.RankPath(peer, rank);
    spec.receives = call.func == NcclFunc::kRecv;
  } else {
    path = CommLinks(call.comm, call.func, call.peer >= 0 ? call.peer : 0, cluster_.HostOf(rank));
  }
  for (LinkIx l : path) spec.links.push_back(EngineLink(rank, l));
  return spec;
}

bool Simulation::EnqueueGated(int rank, int op) {
  RankRun& r = ranks_[size_t(rank)];
  if (r.engine == nullptr) return false;
  const StreamOp user = r.ops[size_t(op)];
  bool p2p = true;
  for (int k = 0; k < user.call_count; ++k) p2p = p2p && IsPointToPoint(r.calls[size_t(user.first_call + k)].func);
  if (p2p) {
    // Send/Recv (and their groups) run on the user stream without a gate:
    // one ungated task, for link state.
    sched::TaskSpec spec = TaskFor(rank, r.calls[size_t(user.first_call)], 0, TrafficClass::kP2P);
    spec.gated = false;
    spec.receives = false;
    for (int k = 0; k < user.call_count; ++k) {
      const NcclCall& c = r.calls[size_t(user.first_call + k)];
      spec.bytes += c.bytes;
      spec.receives = spec.receives || c.func == NcclFunc::kRecv;
      spec.traffic_class = MoreUrgent(spec.traffic_class, ClassOf(c));
      if (k > 0) {
        for (sched::LinkId l : TaskFor(rank, c, 0, TrafficClass::kP2P).links) {
          if (std::find(spec.links.begin(), spec.links.end(), l) == spec.links.end()) spec.links.push_back(l);
        }
      }
    }
    if (options_.decide_at_stream) {
      r.deferred_p2p.emplace(op, std::move(spec));
    } else {
      r.task[size_t(op)] = r.engine->Submit(std::move(spec));
      ScheduleWake(rank);
    }
    r.state[size_t(op)] = OpState::kQueued;
    r.queues[size_t(user.stream)].push_back(op);
    return true;
  }
  // A collective, or a group with one in it: the first call's comm's own
  // stream, a gate per chunk (one for a group).
  const NcclCall first = r.calls[size_t(user.first_call)];
  int lane;
  if (auto it = r.lane_of_comm.find(first.comm); it != r.lane_of_comm.end()) {
    lane = it->second;
  } else {
    lane = int(r.queues.size());
    r.queues.emplace_back();
    r.lane_of_comm.emplace(first.comm, lane);
  }
  StreamOp in;
  in.kind = OpKind::kRecord;
  in.stream = user.stream;
  const int e_in = NewOp(rank, in);
  Enqueue(rank, e_in);
  StreamOp wait_in;
  wait_in.kind = OpKind::kWait;
  wait_in.stream = lane;
  wait_in.wait_for = e_in;
  Enqueue(rank, NewOp(rank, wait_in));

  sched::ChunkPlan plan;
  const int nranks = int(w_.comms[size_t(first.comm)].ranks.size());
  const uint64_t count = first.bytes / std::max<uint32_t>(first.elem_bytes, 1);
  if (user.call_count == 1 && sched::IsChunkable(first.func) &&
      (float_reductions_ || sched::SplitKeepsEveryBit(first.func, first.reduce, first.integer, nranks))) {
    plan = sched::PlanChunks(first.func, count, first.elem_bytes, ChunkBytesOf(first.comm));
  } else {
    plan.chunks.push_back({0, count});
  }
  const uint32_t chunks = uint32_t(plan.chunks.size());
  for (uint32_t i = 0; i < chunks; ++i) {
    // The chunk's gate and call, on the lane.
    const int gate = int(r.gates.size());
    r.gates.emplace_back();
    r.gates.back().call_ns = now_;
    r.gates.back().chunk = i;
    r.gates.back().chunks = chunks;
    StreamOp g;
    g.kind = OpKind::kGate;
    g.stream = lane;
    g.gate = gate;
    const int gate_op = NewOp(rank, g);
    StreamOp call = user;
    call.stream = lane;
    call.gate = gate;  // behind this gate (and no longer the user's op)
    if (chunks > 1) {
      NcclCall part = first;
      part.bytes = plan.chunks[i].count * first.elem_bytes;
      call.first_call = int(r.calls.size());
      call.call_count = 1;
      r.calls.push_back(part);
    }
    const int call_op = NewOp(rank, call);
    // The task at call time: the policy may release it at once.
    uint64_t bytes = 0;
    TrafficClass cls = TrafficClass::kOther;
    bool cls_set = false;
    for (int k = 0; k < r.ops[size_t(call_op)].call_count; ++k) {
      const NcclCall& c = r.calls[size_t(r.ops[size_t(call_op)].first_call + k)];
      bytes += c.bytes;
      cls = cls_set ? MoreUrgent(cls, ClassOf(c)) : ClassOf(c);
      cls_set = true;
    }
    sched::TaskSpec spec = TaskFor(rank, r.calls[size_t(r.ops[size_t(call_op)].first_call)], bytes, cls);
    spec.chunk_index = i;
    spec.chunk_count = chunks;
    spec.cookie = uint64_t(gate);
    const sched::TaskId id = r.engine->ReserveId();
    r.task[size_t(call_op)] = id;
    r.gates[size_t(gate)].task = id;
    if (options_.decide_at_stream) {
      r.gates[size_t(gate)].deferred = std::move(spec);
    } else {
      r.engine->Submit(std::move(spec), id);
    }
    Enqueue(rank, gate_op);
    Enqueue(rank, call_op);
  }
  StreamOp done;
  done.kind = OpKind::kRecord;
  done.stream = lane;
  done.completes = op;  // the user's op ends with its last chunk
  const int e_done = NewOp(rank, done);
  Enqueue(rank, e_done);
  StreamOp wait_done;
  wait_done.kind = OpKind::kWait;
  wait_done.stream = user.stream;
  wait_done.wait_for = e_done;
  Enqueue(rank, NewOp(rank, wait_done));
  r.state[size_t(op)] = OpState::kRunning;
  ScheduleWake(rank);
  return true;
}

void Simulation::SubmitDeferredGate(int rank, int gate) {
  RankRun& r = ranks_[size_t(rank)];
  Gate& g = r.gates[size_t(gate)];
  if (!g.deferred) return;
  sched::TaskSpec spec = std::move(*g.deferred);
  g.deferred.reset();
  g.call_ns = now_;
  r.engine->Submit(std::move(spec), g.task);
  ScheduleWake(rank);
}

void Simulation::SubmitDeferredP2P(int rank, int op) {
  RankRun& r = ranks_[size_t(rank)];
  auto it = r.deferred_p2p.find(op);
  if (it == r.deferred_p2p.end()) return;
  r.task[size_t(op)] = r.engine->Submit(std::move(it->second));
  r.deferred_p2p.erase(it);
  ScheduleWake(rank);
}

void Simulation::CompleteTask(int rank, int op) {
  RankRun& r = ranks_[size_t(rank)];
  const sched::TaskId id = r.task[size_t(op)];
  r.task[size_t(op)] = 0;
  if (r.engine == nullptr || id == 0) return;
  r.engine->Complete(id, r.started_ns[size_t(op)]).IgnoreError();
  ScheduleWake(rank);
}

void Simulation::ScheduleWake(int rank) {
  RankRun& r = ranks_[size_t(rank)];
  if (r.engine == nullptr) return;
  int64_t want = r.engine->WantedWakeNs();
  if (want == kNever) return;
  want = std::max(want, now_ + 1);  // a pass for `now` has just run
  if (want >= r.wake_at) return;
  r.wake_at = want;
  Push(want, EventKind::kEngineWake, rank, kNoOp);
}

void Simulation::EngineWake(int rank) {
  RankRun& r = ranks_[size_t(rank)];
  if (r.engine == nullptr || r.wake_at != now_) return;  // superseded
  r.wake_at = kNever;
  r.engine->Step();
  ScheduleWake(rank);
}

}  // namespace trirace::sim::internal
