#include "sim/run/simulation.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/run/simulation_state.h"
#include "sim/run/trace_out.h"

namespace trirace::sim {
namespace internal {
namespace {

std::vector<NetLinkSpec> LinkSpecs(const ClusterLinks& links, const ModeSettings& mode, bool unlimited) {
  std::vector<NetLinkSpec> specs = links.specs();
  for (NetLinkSpec& s : specs) {
    s.class_queues = mode.every_link_honours || (mode.class_marks && QosHonours(links.cluster().qos, s.name));
    if (unlimited) {
      s.bytes_per_s = 0;
      s.burst_bytes = 0;
    }
  }
  return specs;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Simulation::Simulation(const Cluster& cluster, const Workload& workload, const SimOptions& options)
    : cluster_(cluster),
      w_(workload),
      options_(options),
      mode_(SettingsOf(options.mode, cluster.qos)),
      links_(cluster),
      net_(LinkSpecs(links_, mode_, options.unlimited_links)) {
  const int n = int(w_.ranks.size());
  ranks_.resize(size_t(n));
  urgent_.assign(size_t(n), {});
  for (int r = 0; r < n; ++r) {
    const RankProgram& p = w_.ranks[size_t(r)];
    RankRun& rr = ranks_[size_t(r)];
    rr.ops = p.ops;
    rr.calls = p.calls;
    rr.state.assign(rr.ops.size(), OpState::kIdle);
    rr.pending.assign(rr.ops.size(), 0);
    rr.started_ns.assign(rr.ops.size(), -1);
    rr.task.assign(rr.ops.size(), 0);
    rr.queues.resize(size_t(p.streams));
    rr.stamps.assign(size_t(w_.iterations + 1), -1);
    rr.tx_counter = net_.AddCounter();
    rr.rx_counter = net_.AddCounter();
  }
  comm_rank_.resize(w_.comms.size());
  for (size_t c = 0; c < w_.comms.size(); ++c) {
    comm_rank_[c].assign(size_t(n), -1);
    for (size_t i = 0; i < w_.comms[c].ranks.size(); ++i) comm_rank_[c][size_t(w_.comms[c].ranks[i])] = int(i);
  }
  // The other ranks that send through each rank's NIC (the net plugin's
  // per-process gauges on one device).
  ranks_on_nic_.resize(size_t(n));
  std::map<std::pair<int, int>, std::vector<int>> by_nic;
  for (int r = 0; r < n && r < cluster_.ranks(); ++r) by_nic[{cluster_.HostOf(r), cluster_.NicOf(r)}].push_back(r);
  for (const auto& [nic, ranks] : by_nic) {
    for (int r : ranks) {
      for (int o : ranks) {
        if (o != r) ranks_on_nic_[size_t(r)].push_back(o);
      }
    }
  }
}

void Simulation::Fail(std::string error) {
  if (error_.empty()) error_ = std::move(error);
}

void Simulation::Push(int64_t t, EventKind kind, int rank, int op) {
  events_.push(Event{t, seq_++, kind, rank, op});
}

void Simulation::MarkDirty(int rank) {
  RankRun& r = ranks_[size_t(rank)];
  if (rank == processing_) {
    again_ = true;  // ProcessRank looks again before it returns
    return;
  }
  if (r.dirty) return;
  r.dirty = true;
  dirty_.push_back(rank);
}

int Simulation::NewOp(int rank, StreamOp op) {
  RankRun& r = ranks_[size_t(rank)];
  r.ops.push_back(op);
  r.state.push_back(OpState::kIdle);
  r.pending.push_back(0);
  r.started_ns.push_back(-1);
  r.task.push_back(0);
  if (op.stream >= int(r.queues.size())) r.queues.resize(size_t(op.stream) + 1);
  return int(r.ops.size()) - 1;
}

void Simulation::Enqueue(int rank, int op) {
  RankRun& r = ranks_[size_t(rank)];
  // A chunk's call (gate >= 0) is the gated launch's own: on its lane as it is.
  const StreamOp& o = r.ops[size_t(op)];
  if (mode_.gated && o.kind == OpKind::kComm && o.gate < 0 && EnqueueGated(rank, op)) return;
  r.state[size_t(op)] = OpState::kQueued;
  r.queues[size_t(r.ops[size_t(op)].stream)].push_back(op);
}

bool Simulation::RunHost(int rank) {
  RankRun& r = ranks_[size_t(rank)];
  const RankProgram& p = w_.ranks[size_t(rank)];
  bool progress = false;
  while (r.host_pc < p.host.size() && !r.host_sleeping) {
    const HostStep& h = p.host[r.host_pc];
    switch (h.kind) {
      case HostKind::kEnqueue:
        if (options_.trace != nullptr) options_.trace->Called(rank, h.op, now_, int64_t(r.host_pc));
        Enqueue(rank, h.op);
        break;
      case HostKind::kHostWait:
        if (r.state[size_t(h.op)] != OpState::kDone) return progress;
        break;
      case HostKind::kIterationBegin:
        if (r.engine != nullptr && options_.decide_at_stream) {
          // The streams' iteration: the engine hears of it when the first
          // stream gets there.
          StreamOp mark;
          mark.kind = OpKind::kRecord;
          mark.stream = 0;
          mark.begin_iteration = h.value;
          Enqueue(rank, NewOp(rank, mark));
        } else if (r.engine != nullptr) {
          r.engine->BeginIteration(h.value);
          ScheduleWake(rank);
        }
        if (options_.trace != nullptr) options_.trace->Instant(rank, "begin", now_, h.value, int64_t(r.host_pc));
        break;
      case HostKind::kIterationEnd: break;
      case HostKind::kSpend:
        r.host_sleeping = true;
        Push(now_ + h.value, EventKind::kHostResume, rank, kNoOp);
        break;
    }
    ++r.host_pc;
    progress = true;
  }
  return progress;
}

void Simulation::OpDone(int rank, int op) {
  RankRun& r = ranks_[size_t(rank)];
  if (r.state[size_t(op)] == OpState::kDone) return;
  r.state[size_t(op)] = OpState::kDone;
  const StreamOp& o = r.ops[size_t(op)];
  if (options_.trace != nullptr && r.started_ns[size_t(op)] >= 0) {
    if (o.kind == OpKind::kComm && o.gate >= 0) {
      // A gated chunk: its call, the gate's release and the run.
      const Gate& g = r.gates[size_t(o.gate)];
      const NcclCall& call = r.calls[size_t(o.first_call)];
      options_.trace->Gate(rank, call, ClassOf(call), g.call_ns, std::max(g.open_ns, g.call_ns), now_,
                           sched::ReleaseReasonName(g.reason), g.chunk, g.chunks);
    } else if (o.kind == OpKind::kCompute || o.kind == OpKind::kComm) {
      const NcclCall* calls = o.kind == OpKind::kComm ? &r.calls[size_t(o.first_call)] : nullptr;
      options_.trace->Slice(rank, op, o, calls, [&](const NcclCall& c) { return ClassOf(c); },
                            r.started_ns[size_t(op)], now_);
    }
  }
  if (r.task[size_t(op)] != 0) CompleteTask(rank, op);
  if (o.completes != kNoOp) OpDone(rank, o.completes);
  MarkDirty(rank);
}

void Simulation::PartDone(int rank, int op) {
  RankRun& r = ranks_[size_t(rank)];
  if (--r.pending[size_t(op)] == 0 && r.state[size_t(op)] == OpState::kRunning) OpDone(rank, op);
}

bool Simulation::TryStart(int rank, int op) {
  RankRun& r = ranks_[size_t(rank)];
  const StreamOp& o = r.ops[size_t(op)];
  OpState& st = r.state[size_t(op)];
  if (st == OpState::kDone) return true;
  switch (o.kind) {
    case OpKind::kCompute:
      if (st == OpState::kQueued) {
        st = OpState::kRunning;
        r.started_ns[size_t(op)] = now_;
        const int64_t ns = int64_t(double(o.duration_ns) * cluster_.compute_scale);
        if (ns <= 0) {
          OpDone(rank, op);
        } else {
          Push(now_ + ns, EventKind::kComputeDone, rank, op);
        }
      }
      break;
    case OpKind::kStamp:
      if (o.stamp >= 0 && o.stamp < int(r.stamps.size())) r.stamps[size_t(o.stamp)] = double(now_);
      if (options_.trace != nullptr) options_.trace->Stamp(rank, op, o, now_);
      OpDone(rank, op);
      break;
    case OpKind::kRecord:
      if (o.begin_iteration >= 0 && r.engine != nullptr) {
        r.engine->BeginIteration(o.begin_iteration);
        ScheduleWake(rank);
      }
      OpDone(rank, op);
      break;
    case OpKind::kWait:
      if (o.wait_for == kNoOp || r.state[size_t(o.wait_for)] == OpState::kDone) OpDone(rank, op);
      break;
    case OpKind::kGate:
      SubmitDeferredGate(rank, o.gate);
      if (r.gates[size_t(o.gate)].open) OpDone(rank, op);
      break;
    case OpKind::kComm:
      if (st == OpState::kQueued) {
        st = OpState::kRunning;
        r.started_ns[size_t(op)] = now_;
        if (!r.deferred_p2p.empty()) SubmitDeferredP2P(rank, op);
        r.pending[size_t(op)] = o.call_count;
        for (int k = 0; k < o.call_count; ++k) Post(rank, op, r.calls[size_t(o.first_call + k)]);
        if (r.pending[size_t(op)] <= 0) OpDone(rank, op);
      }
      break;
  }
  return r.state[size_t(op)] == OpState::kDone;
}

bool Simulation::AdvanceStream(int rank, int stream) {
  bool progress = false;
  for (;;) {
    std::deque<int>& q = ranks_[size_t(rank)].queues[size_t(stream)];
    if (q.empty()) return progress;
    const int op = q.front();
    if (!TryStart(rank, op)) return progress;
    ranks_[size_t(rank)].queues[size_t(stream)].pop_front();
    progress = true;
  }
}

void Simulation::ProcessRank(int rank) {
  processing_ = rank;
  for (again_ = true; again_ && error_.empty();) {
    again_ = false;
    bool progress = RunHost(rank);
    for (size_t s = 0; s < ranks_[size_t(rank)].queues.size(); ++s) progress |= AdvanceStream(rank, int(s));
    again_ = again_ || progress;
  }
  processing_ = -1;
}

TrafficClass Simulation::ClassOf(const NcclCall& call) const {
  return call.traffic_class != TrafficClass::kOther ? call.traffic_class : w_.comms[size_t(call.comm)].traffic_class;
}

void Simulation::Post(int rank, int op, const NcclCall& call) {
  RankRun& r = ranks_[size_t(rank)];
  const CommSpec& comm = w_.comms[size_t(call.comm)];
  const int me = comm_rank_[size_t(call.comm)][size_t(rank)];
  if (IsPointToPoint(call.func)) {
    const bool send = call.func == NcclFunc::kSend;
    const uint64_t dir = (uint64_t(uint32_t(call.comm)) << 33) | (uint64_t(uint32_t(call.peer)) << 1) | (send ? 1 : 0);
    InstanceKey key{call.comm, send ? me : call.peer, send ? call.peer : me, r.p2p_seq[dir]++};
    Instance& in = instances_[key];
    in.p2p = true;
    in.comm = call.comm;
    in.cls = ClassOf(call);
    in.src = comm.ranks[size_t(key.src)];
    in.dst = comm.ranks[size_t(key.dst)];
    if (send) {
      in.send_op = op;
      in.bytes = call.bytes;
    } else {
      in.recv_op = op;
      if (in.send_op == kNoOp) in.bytes = call.bytes;
    }
    if (cluster_.transport == Transport::kSocket) {
      if (send) {
        StartMessage(key, in);
        PartDone(rank, op);  // eager: the bytes are the transport's now
        return;
      }
      if (in.flow_done) {
        instances_.erase(key);
        PartDone(rank, op);
      }
      return;
    }
    if (in.send_op != kNoOp && in.recv_op != kNoOp) StartMessage(key, in);
    return;
  }
  InstanceKey key{call.comm, -1, -1, r.coll_seq[call.comm]++};
  Instance& in = instances_[key];
  if (in.posted == 0) {
    in.func = call.func;
    in.comm = call.comm;
    in.bytes = call.bytes;
    in.root = call.peer >= 0 ? call.peer : 0;
    in.cls = ClassOf(call);
  } else if (in.func != call.func || in.bytes != call.bytes) {
    Fail(absl::StrCat("the ranks' calls do not match: collective ", key.k, " of comm ", comm.name, " is ",
                      NcclFuncName(in.func), " of ", in.bytes, " bytes on comm rank ",
                      comm_rank_[size_t(call.comm)][size_t(in.parts[0].first)], " but ", NcclFuncName(call.func),
                      " of ", call.bytes, " bytes on comm rank ", me));
    return;
  }
  in.posted++;
  in.parts.push_back({rank, op});
  if (in.posted == int(comm.ranks.size())) StartCollective(key, in);
}

int Simulation::LevelOf(TrafficClass cls, int sender_rank) const {
  switch (cls) {
    case TrafficClass::kP2P: return 0;
    case TrafficClass::kSparse:
    case TrafficClass::kOther: return 1;
    case TrafficClass::kDense: break;
  }
  if (mode_.front_stage_marks && sender_rank >= 0 && ranks_[size_t(sender_rank)].dense_ahead) return 1;
  return 2;
}

uint64_t Simulation::NewOwner(const FlowOwner& owner) {
  if (free_owners_.empty()) {
    flow_owners_.push_back(owner);
    return flow_owners_.size() - 1;
  }
  const uint64_t cookie = free_owners_.back();
  free_owners_.pop_back();
  flow_owners_[size_t(cookie)] = owner;
  return cookie;
}

void Simulation::StartTransfer(const Layout& layout, const Layout::Transfer& t, const InstanceKey& key, bool p2p,
                               TrafficClass cls, int level, int64_t fifo_key) {
  FlowSpec f;
  f.bytes = layout.bytes_per_transfer;
  f.level = level;
  f.latency_ns = options_.unlimited_links ? 0 : layout.LatencyNs(cluster_);
  f.fifo_key = fifo_key;
  f.links.reserve(t.path->size());
  for (LinkIx l : *t.path) {
    // The sending and receiving ranks' own counters see their NIC's part.
    int counter = -1;
    if (l == t.nic_tx && t.sender >= 0) counter = ranks_[size_t(t.sender)].tx_counter;
    if (l == t.nic_rx && t.receiver >= 0) counter = ranks_[size_t(t.receiver)].rx_counter;
    f.links.push_back({l, 1, counter});
  }
  FlowOwner owner{key, p2p, cls, t.nic_tx >= 0 ? t.sender : -1, layout.bytes_per_transfer};
  if (owner.sender >= 0) urgent_[size_t(owner.sender)][size_t(ClassIndex(cls))] += int64_t(owner.bytes);
  f.cookie = NewOwner(owner);
  net_.Start(std::move(f), now_);
}

void Simulation::StartCollective(const InstanceKey& key, Instance& in) {
  const CommSpec& comm = w_.comms[size_t(in.comm)];
  const Layout layout = LayoutCollective(in.func, comm.ranks, in.bytes, in.root, links_);
  if (layout.transfers.empty()) {
    const std::vector<std::pair<int, int>> parts = std::move(in.parts);
    instances_.erase(key);
    for (const auto& [rank, op] : parts) PartDone(rank, op);
    return;
  }
  // One level for the call: [R14]'s marks where every member is in front.
  int level = LevelOf(in.cls, -1);
  if (in.cls == TrafficClass::kDense && mode_.front_stage_marks) {
    bool all = true;
    for (int r : comm.ranks) all = all && ranks_[size_t(r)].dense_ahead;
    if (all) level = 1;
  }
  in.flows_left = int(layout.transfers.size());
  for (const Layout::Transfer& t : layout.transfers) StartTransfer(layout, t, key, false, in.cls, level, -1);
}

void Simulation::StartMessage(const InstanceKey& key, Instance& in) {
  const Layout layout = LayoutSend(in.src, in.dst, in.bytes, links_);
  const int level = LevelOf(in.cls, in.src);
  // A TCP connection per (sender, receiver, class) moves its messages in order.
  const int64_t fifo = cluster_.transport == Transport::kSocket && layout.crosses_hosts
                           ? (int64_t(in.src) * int64_t(ranks_.size()) + in.dst) * 4 + level
                           : -1;
  StartTransfer(layout, layout.transfers[0], key, true, in.cls, level, fifo);
}

void Simulation::FlowFinished(uint64_t cookie) {
  const FlowOwner owner = flow_owners_[size_t(cookie)];  // a copy: PartDone may start flows
  free_owners_.push_back(cookie);
  if (owner.sender >= 0) urgent_[size_t(owner.sender)][size_t(ClassIndex(owner.cls))] -= int64_t(owner.bytes);
  auto it = instances_.find(owner.key);
  if (it == instances_.end()) return;
  Instance& in = it->second;
  if (!owner.p2p) {
    if (--in.flows_left > 0) return;
    const std::vector<std::pair<int, int>> parts = std::move(in.parts);
    instances_.erase(it);
    for (const auto& [rank, op] : parts) PartDone(rank, op);
    return;
  }
  in.flow_done = true;
  if (cluster_.transport == Transport::kSocket) {
    if (in.recv_op == kNoOp) return;  // the receive is not posted yet
    const int dst = in.dst, op = in.recv_op;
    instances_.erase(it);
    PartDone(dst, op);
    return;
  }
  const int src = in.src, send_op = in.send_op, dst = in.dst, recv_op = in.recv_op;
  instances_.erase(it);
  PartDone(src, send_op);
  PartDone(dst, recv_op);
}

std::string Simulation::Stuck() const {
  std::string out = "the simulated run is stuck (calls that never match, or a wait on an op never issued):";
  int shown = 0;
  for (size_t r = 0; r < ranks_.size() && shown < 8; ++r) {
    const RankRun& rr = ranks_[r];
    for (size_t s = 0; s < rr.queues.size() && shown < 8; ++s) {
      if (rr.queues[s].empty()) continue;
      const int op = rr.queues[s].front();
      const StreamOp& o = rr.ops[size_t(op)];
      absl::StrAppend(&out, " rank ", r, " stream ", s, " at op ", op);
      if (o.kind == OpKind::kComm) {
        const NcclCall& c = rr.calls[size_t(o.first_call)];
        absl::StrAppend(&out, " (", NcclFuncName(c.func), " on ", w_.comms[size_t(c.comm)].name, ")");
      }
      absl::StrAppend(&out, ";");
      ++shown;
    }
    const RankProgram& p = w_.ranks[r];
    if (rr.host_pc < p.host.size() && shown < 8) {
      absl::StrAppend(&out, " rank ", r, " host at step ", rr.host_pc, ";");
      ++shown;
    }
  }
  return out;
}

absl::StatusOr<ModeResult> Simulation::Run() {
  const auto wall0 = std::chrono::steady_clock::now();
  if (mode_.front_stage_marks || mode_.front_stage_gauge) PlaceFrontStages();
  if (mode_.gated && !options_.unlimited_links) SetUpGating();
  for (size_t r = 0; r < ranks_.size(); ++r) MarkDirty(int(r));
  std::vector<uint64_t> finished;
  for (;;) {
    while (!dirty_.empty() && error_.empty()) {
      const int r = dirty_.back();
      dirty_.pop_back();
      ranks_[size_t(r)].dirty = false;
      ProcessRank(r);
    }
    if (!error_.empty()) return absl::FailedPreconditionError(error_);
    const int64_t tn = net_.NextEventNs();
    const int64_t tq = events_.empty() ? kNever : events_.top().t;
    const int64_t t = std::min(tn, tq);
    if (t == kNever) break;
    now_ = std::max(now_, t);
    clock_.SetNs(now_);
    finished.clear();
    net_.AdvanceTo(now_, &finished);
    for (uint64_t cookie : finished) FlowFinished(cookie);
    while (!events_.empty() && events_.top().t <= now_) {
      const Event e = events_.top();
      events_.pop();
      ++event_count_;
      switch (e.kind) {
        case EventKind::kComputeDone: OpDone(e.rank, e.op); break;
        case EventKind::kHostResume:
          ranks_[size_t(e.rank)].host_sleeping = false;
          MarkDirty(e.rank);
          break;
        case EventKind::kEngineWake: EngineWake(e.rank); break;
      }
    }
    event_count_ += finished.size();
  }
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const RankRun& rr = ranks_[r];
    bool busy = rr.host_pc < w_.ranks[r].host.size();
    for (const std::deque<int>& q : rr.queues) busy = busy || !q.empty();
    if (busy) return absl::FailedPreconditionError(Stuck());
  }

  ModeResult out;
  out.mode = options_.mode;
  out.run_ms = double(now_) / 1e6;
  // Per job (one unless the workload says otherwise), per iteration, the
  // slowest of its ranks. With several jobs, each job's median counts only
  // the iterations that ended while every job still ran: a job that runs
  // alone after the others ended says nothing of their sharing.
  const size_t jobs = std::max<size_t>(w_.job_names.size(), 1);
  const int skip = std::min(w_.warmup, w_.iterations);
  auto job_of = [&](size_t r) { return w_.job_of_rank.empty() ? 0 : w_.job_of_rank[r]; };
  std::vector<double> job_end(jobs, 0);  // when each job's last rank stamped its last iteration
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (job_of(r) < 0) continue;
    for (double t : ranks_[r].stamps) job_end[size_t(job_of(r))] = std::max(job_end[size_t(job_of(r))], t);
  }
  const double all_running_until = *std::min_element(job_end.begin(), job_end.end());
  for (size_t j = 0; j < jobs; ++j) {
    JobResult job;
    job.name = j < w_.job_names.size() ? w_.job_names[j] : w_.name;
    job.iteration_ms.assign(size_t(w_.iterations), 0);
    std::vector<double> ended(size_t(w_.iterations), 0);
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (job_of(r) != int(j)) continue;
      const RankRun& rr = ranks_[r];
      for (int it = 0; it < w_.iterations; ++it) {
        const double a = rr.stamps[size_t(it)], b = rr.stamps[size_t(it) + 1];
        if (a >= 0 && b >= 0) job.iteration_ms[size_t(it)] = std::max(job.iteration_ms[size_t(it)], (b - a) / 1e6);
        ended[size_t(it)] = std::max(ended[size_t(it)], b);
      }
    }
    std::vector<double> counted;
    for (int it = skip; it < w_.iterations; ++it) {
      if (jobs == 1 || ended[size_t(it)] <= all_running_until) counted.push_back(job.iteration_ms[size_t(it)]);
    }
    if (counted.empty()) counted.assign(job.iteration_ms.begin() + skip, job.iteration_ms.end());
    job.iteration_ms_median = Median(counted);
    if (j == 0 || job.iteration_ms_median > out.iteration_ms_median) {
      out.iteration_ms = job.iteration_ms;
      out.iteration_ms_median = job.iteration_ms_median;
    }
    if (jobs > 1) out.jobs.push_back(std::move(job));
  }
  // Links: bytes per iteration and utilisation, busiest first.
  const double iterations = std::max(w_.iterations, 1);
  std::vector<LinkUse> uses;
  for (size_t l = 0; l < net_.link_count(); ++l) {
    const NetLinkSpec& spec = links_.specs()[l];
    const double bytes = net_.LinkBytes(LinkIx(l));
    if (bytes <= 0 || spec.bytes_per_s <= 0) continue;
    LinkUse u;
    u.name = spec.name;
    u.gbps = spec.bytes_per_s * 8 / 1e9;
    u.bytes_per_iteration = bytes / iterations;
    // A token bucket carries at most its burst more than the sustained rate
    // over any span (tc's tbf: the test bed's links), so the share is of
    // burst + rate x time, and an iteration takes at least its bytes less
    // one burst at the rate.
    const double burst = Network::EffectiveBurst(spec);
    u.utilisation = now_ > 0 ? bytes / (burst + spec.bytes_per_s * double(now_) * 1e-9) : 0;
    out.busiest_link_ms =
        std::max(out.busiest_link_ms, std::max(u.bytes_per_iteration - burst, 0.0) / spec.bytes_per_s * 1e3);
    uses.push_back(std::move(u));
  }
  std::stable_sort(uses.begin(), uses.end(), [](const LinkUse& a, const LinkUse& b) {
    return a.bytes_per_iteration / a.gbps > b.bytes_per_iteration / b.gbps;
  });
  if (int(uses.size()) > options_.busiest_links) uses.resize(size_t(std::max(options_.busiest_links, 0)));
  out.busiest = std::move(uses);
  out.events = event_count_;
  out.flows = net_.stats().flows;
  out.solves = net_.stats().solves;
  StopEngines();
  for (RankRun& rr : ranks_) {
    if (rr.engine == nullptr) continue;
    const sched::EngineStats st = rr.engine->stats();
    out.tasks += st.submitted;
    out.held_to_bound += st.held_to_bound;
    out.occupancy_samples += st.occupancy_samples;
    out.tuning_changes += st.tuning_changes;
    out.policy = std::string(rr.engine->policy_name());
  }
  out.hold_waits_ns = std::move(hold_waits_);
  for (size_t i = 0; i < release_reasons_.size(); ++i) {
    if (release_reasons_[i] > 0) {
      out.release_reasons.push_back({std::string(sched::ReleaseReasonName(sched::ReleaseReason(i))), release_reasons_[i]});
    }
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace internal

absl::StatusOr<ModeResult> Simulate(const Cluster& cluster, const Workload& workload, const SimOptions& options) {
  std::string error;
  if (!ValidateWorkload(workload, &error)) return absl::InvalidArgumentError(error);
  if (int(workload.ranks.size()) > cluster.ranks()) {
    return absl::InvalidArgumentError(absl::StrCat("the workload has ", workload.ranks.size(), " ranks but cluster ",
                                                   cluster.name, " has ", cluster.ranks(), " (", cluster.hosts(),
                                                   " hosts x ", cluster.ranks_per_host, ")"));
  }
  internal::Simulation sim(cluster, workload, options);
  return sim.Run();
}

}  // namespace trirace::sim
