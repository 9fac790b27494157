// GatedLauncher: creation from the params, the per-op dispatch, and the
// ticket hand-offs with the engine (Submit, OpenGate, TicketDone). The
// chunked launch is in gated_launch_chunked.cc, user groups in
// gated_launch_group.cc.
#include "interpose/gate/gated_launcher.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/params.h"
#include "interpose/gate/engine_factory.h"
#include "interpose/start_verdict.h"
#include "scheduler/chunk_planner.h"

namespace trirace::interpose {

void TicketDoneCallback(void* p) {
  auto* t = static_cast<GateTicket*>(p);
  t->launcher->TicketDone(t);
}

void TicketStartCallback(void* p) {
  std::atomic<int64_t>& started = static_cast<GateTicket*>(p)->started_ns;
  const int64_t now = MonotonicNs();
  int64_t seen = started.load(std::memory_order_relaxed);
  while (now > seen && !started.compare_exchange_weak(seen, now, std::memory_order_release)) {
  }
}

namespace {

// The tuner's changes: one INFO line and one trace event each.
void ReportTuning(const sched::TuningChange& c, RecordSink* sink) {
  const sched::TuningEvidence& e = c.evidence;
  const std::string p2p =
      e.p2p_slowdown > 0 ? absl::StrFormat("P2P beside DENSE %.2fx %s over %d samples", e.p2p_slowdown,
                                           e.baseline ? "alone" : "its wire time", e.samples)
                         : absl::StrFormat("P2P beside DENSE not judged (%d samples, %d faster than the link)",
                                           e.samples, e.too_fast);
  TRIRACE_INFO(SCHED,
               "tuner: link %d (%s): window x%.2f -> x%.2f, credit x%.2f -> x%.2f (%s; %s, link use %.0f%%, DENSE "
               "waited %.0f%% in gaps and %.0f%% beside P2P/SPARSE)",
               c.link, c.link_name, c.window_before, c.window_scale, c.credit_before, c.credit_scale, c.why, p2p,
               100 * e.utilisation, 100 * e.held_gap, 100 * e.held_beside);
  TraceRecord r;
  r.kind = RecordKind::kTuning;
  r.start_ns = r.end_ns = MonotonicNs();
  r.tuning.link = static_cast<int32_t>(c.link);
  r.tuning.window_scale = static_cast<float>(c.window_scale);
  r.tuning.credit_scale = static_cast<float>(c.credit_scale);
  r.tuning.p2p_slowdown = static_cast<float>(e.p2p_slowdown);
  r.tuning.samples = e.samples;
  r.tuning.utilisation = static_cast<float>(e.utilisation);
  r.tuning.held_gap = static_cast<float>(e.held_gap);
  r.tuning.held_beside = static_cast<float>(e.held_beside);
  r.tuning.why = c.why;
  sink->RecordEvent(r);
}

}  // namespace

uint32_t ParseExcludedRoles(absl::string_view text, std::string* bad) {
  uint32_t mask = 0;
  for (absl::string_view name : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    name = absl::StripAsciiWhitespace(name);
    bool found = false;
    for (int role = TRIRACE_ROLE_UNKNOWN; role <= TRIRACE_ROLE_EXPERT; ++role) {
      if (name == RoleName(role)) {
        mask |= 1u << role;
        found = true;
      }
    }
    if (!found) absl::StrAppend(bad, bad->empty() ? "" : ", ", name);
  }
  return mask;
}

GatedLauncher::GatedLauncher(const RealNccl& real, RecordSink* sink, device::Device& dev, StreamWatcher& watcher)
    : real_(real), sink_(sink), dev_(dev), watcher_(watcher) {}

GatedLauncher::~GatedLauncher() { Shutdown(); }

absl::StatusOr<std::unique_ptr<GatedLauncher>> GatedLauncher::Create(const RealNccl& real, RecordSink* sink,
                                                                     device::Device& dev,
                                                                     StreamWatcher& watcher) {
  if (absl::Status pre = GatedLaunchPrecondition(); !pre.ok()) return pre;
  std::unique_ptr<GatedLauncher> l(new GatedLauncher(real, sink, dev, watcher));
  l->links_ = OpLinks::FromParams();
  absl::StatusOr<std::unique_ptr<sched::Engine>> engine =
      MakeEngineFromParams(l.get(), *l->links_, sched::EngineOptions::FromParams(), &l->occupancy_input_);
  if (!engine.ok()) return engine.status();
  l->engine_ = *std::move(engine);
  l->engine_->SetTuningListener([sink](const sched::TuningChange& c) { ReportTuning(c, sink); });
  l->stamp_p2p_start_ = l->engine_->options().tuning.enabled && dev.inline_funcs();
  GatedLauncher* self = l.get();
  if (ParamBool(ParamId::kPeerExchange)) {
    l->exchange_ = std::make_unique<PeerExchange>(
        real, dev, [self](CommState& state, absl::StatusOr<std::vector<topo::PeerIdentity>> ranks) {
          self->PeersKnown(state, std::move(ranks));
        });
  }
  l->watchdog_ = std::make_unique<GateWatchdog>(
      l->engine_->options().max_hold_ns, [](GateTicket* t) { MarkRelease(t, sched::ReleaseReason::kMaxHold); },
      [self](std::unique_ptr<CommLane> lane) { self->FreeLane(std::move(lane)); });
  if (absl::Status s = l->watchdog_->Start(); !s.ok()) return s;
  topo::ChunkSettings& chunk = l->chunk_settings_;
  chunk.fixed_bytes = static_cast<uint64_t>(ParamInt(ParamId::kChunkBytes));
  chunk.wire_us = static_cast<uint32_t>(ParamInt(ParamId::kChunkUs));  // the parameter's bound fits
  chunk.min_bytes = static_cast<uint64_t>(ParamInt(ParamId::kChunkMinBytes));
  chunk.float_reductions = ParamChoice<ChunkFloatReductions>() == ChunkFloatReductions::kOn;
  l->unagreed_chunk_bytes_ =
      sched::CommChunkBytes(chunk.fixed_bytes, int64_t{chunk.wire_us} * 1000, chunk.min_bytes, 1, 0);
  l->front_stage_first_ = FrontStageFirstEnabled();
  std::string bad;
  l->excluded_roles_ = ParseExcludedRoles(ParamString(ParamId::kExcludeRoles), &bad);
  if (!bad.empty()) {
    TRIRACE_WARN(INTERPOSE, "TRIRACE_EXCLUDE_ROLES=\"%s\": unknown role(s) %s ignored; accepted: data-parallel, "
                 "pipeline, tensor, expert, unknown", ParamString(ParamId::kExcludeRoles), bad);
  }
  TRIRACE_INFO(INTERPOSE, "schedule mode: gated launch on the %s device backend, policy %s, hold bound %d us "
               "(or %.0f%% of the iteration period), chunks of %s", l->dev_.name(),
               std::string(l->engine_->policy_name()), l->engine_->options().max_hold_ns / 1000,
               100 * l->engine_->options().max_hold_fraction,
               chunk.fixed_bytes > 0 ? absl::StrCat(chunk.fixed_bytes, " bytes")
               : chunk.wire_us == 0  ? std::string("none")
                                     : absl::StrCat(chunk.wire_us, " us of wire time per comm"));
  return l;
}

void GatedLauncher::Shutdown() {
  if (shut_down_.exchange(true)) return;
  failed_.store(true, std::memory_order_relaxed);  // later ops pass through, silently
  if (watchdog_ != nullptr) watchdog_->Stop();
  if (engine_ == nullptr) return;
  // Opens every gate still closed. The engine itself stays: callbacks of
  // work still on the streams report to it.
  engine_->Stop();
  const Stats s = stats();
  TRIRACE_INFO(INTERPOSE, "schedule mode (%s policy): %d gated tickets, %d ungated, %d ops passed through; "
               "%d released at the hold bound by the engine, %d by the watchdog; longest hold %.3f ms; engine "
               "thread CPU %.3f ms", std::string(engine_->policy_name()), s.gated_tickets, s.ungated_tickets,
               s.passthrough, s.engine.held_to_bound, s.watchdog_opens, s.engine.longest_hold_ns / 1e6,
               s.engine.thread_cpu_ns / 1e6);
}

void GatedLauncher::Fail(const absl::Status& status, absl::string_view step) {
  if (failed_.exchange(true)) return;
  TRIRACE_WARN(INTERPOSE, "schedule mode: %s failed: %s; gated launch is off for the rest of the process (ops run "
               "as in observe mode)", step, status.ToString());
}

bool GatedLauncher::CanGate(const Op& op) {
  if (failed() || op.state == nullptr || op.state->nonblocking) return false;
  if ((excluded_roles_ >> EffectiveRole(*op.state, nullptr)) & 1u) return false;
  // A datatype this build does not know, or a stream the backend's library
  // would reject: the op runs as in observe mode, so the real library says
  // what is wrong (once), and the gated path never uses the stream (a
  // failure there would turn gating off for the process).
  if (DataTypeSize(op.datatype) == 0 || !dev_.StreamIsValid(op.stream)) return false;
  absl::StatusOr<bool> capturing = dev_.IsCapturing(op.stream);
  return capturing.ok() && !*capturing;
}

CommLane* GatedLauncher::LaneFor(CommState* state) {
  if (CommLane* l = state->lane.load(std::memory_order_acquire)) return l;
  absl::MutexLock lock(&lanes_mu_);
  if (CommLane* l = state->lane.load(std::memory_order_acquire)) return l;
  std::unique_ptr<device::GateBlock> spare;
  for (auto it = spare_gates_.begin(); it != spare_gates_.end(); ++it) {
    if (it->first == state->device) {
      spare = std::move(it->second);
      spare_gates_.erase(it);
      break;
    }
  }
  absl::StatusOr<std::unique_ptr<CommLane>> lane = CommLane::Create(dev_, state, std::move(spare));
  if (!lane.ok()) {
    Fail(lane.status(), "creating the dedicated stream of a comm");
    return nullptr;
  }
  CommLane* l = lane->get();
  watchdog_->AddLane(l);
  lanes_.push_back(*std::move(lane));
  state->lane.store(l, std::memory_order_release);
  return l;
}

void GatedLauncher::CommRemoved(CommState* state) {
  // After a failure a gate wait may be left on D without its ticket: the
  // lane is kept.
  if (failed()) return;
  CommLane* lane = state->lane.exchange(nullptr, std::memory_order_acq_rel);
  if (lane == nullptr) return;
  absl::MutexLock lock(&lanes_mu_);
  auto it = std::find_if(lanes_.begin(), lanes_.end(), [lane](const auto& l) { return l.get() == lane; });
  if (it == lanes_.end()) return;
  watchdog_->Retire(std::move(*it));
  lanes_.erase(it);
}

void GatedLauncher::FreeLane(std::unique_ptr<CommLane> lane) {
  const int device = lane->device();
  std::unique_ptr<device::GateBlock> gates = lane->TakeGates();
  lane.reset();
  if (gates == nullptr) return;
  absl::MutexLock lock(&lanes_mu_);
  spare_gates_.emplace_back(device, std::move(gates));
}

GateTicket* GatedLauncher::NewTicket(CommLane* lane, CommState* state) {
  if (lane != nullptr) lane->TicketMade();
  auto* t = new GateTicket;
  t->launcher = this;
  t->lane = lane;
  t->state = state;
  return t;
}

sched::TaskSpec GatedLauncher::SpecFor(const TraceRecord& base, uint64_t bytes, const CommState* state) const {
  sched::TaskSpec spec;
  spec.comm = state != nullptr ? state->id : 0;
  spec.traffic_class = static_cast<TrafficClass>(base.op_class);
  spec.bytes = bytes;
  spec.links = links_->For(state, base.func, base.peer_or_root);
  spec.tag = base.tag;
  spec.receives = base.func != NcclFunc::kSend;
  return spec;
}

bool GatedLauncher::Submit(GateTicket* t, sched::TaskSpec spec, int64_t call_ns) {
  if (t->state != nullptr) spec.comm = t->state->id;
  spec.cookie = reinterpret_cast<uint64_t>(t);
  spec.gated = t->gated;
  spec.chunk_index = t->chunk_index;
  spec.chunk_count = t->chunk_count;
  t->arrived.store(t->gated ? 0 : GateTicket::kReleased | GateTicket::kWatched, std::memory_order_relaxed);
  (t->gated ? gated_tickets_ : ungated_tickets_).fetch_add(1, std::memory_order_relaxed);
  t->task = engine_->ReserveId();
  engine_->Submit(std::move(spec), t->task);
  if (!t->gated) return true;
  if ((t->arrived.load(std::memory_order_acquire) & GateTicket::kReleased) != 0) {
    // Released inside Submit: no gate to put on the stream, nothing to watch.
    // (The ticket lives on: its completion callback is not queued yet.)
    Arrive(t, GateTicket::kWatched);
    return true;
  }
  watchdog_->Watch(t->lane, t, call_ns, engine_->hold_bound_ns());
  return false;
}

void GatedLauncher::OpenGate(const sched::ReleasedTask& task) {
  auto* t = reinterpret_cast<GateTicket*>(task.cookie);
  if (t == nullptr) return;
  if (t->gated) ReleaseGate(t, task.reason);
  Arrive(t, GateTicket::kReleased);
}

void GatedLauncher::TicketDone(GateTicket* t) {
  if (t->streams_left.fetch_sub(1, std::memory_order_acq_rel) > 1) return;
  const int64_t now = MonotonicNs();
  const int64_t release = t->release_ns.load(std::memory_order_acquire);
  for (TraceRecord& r : t->records) {
    r.end_ns = now;
    r.completion = CompletionSource::kStream;
    if (t->gated && release > 0) {
      r.gate_wait_ns = std::max<int64_t>(0, release - r.start_ns);
      r.run_ns = std::max<int64_t>(0, now - release);
      r.release_reason = t->reason;
    }
    sink_->RecordFinished(r, t->state);
  }
  Arrive(t, GateTicket::kDone);
}

ncclResult_t GatedLauncher::Launch(const Op& op, OpRecording* rec) {
  if (front_stage_first_ && op.state != nullptr && IsPointToPoint(op.func)) NoteHostPlace(*op.state);
  if (op.group != nullptr) return LaunchInGroup(op, rec);
  if (!CanGate(op)) {
    passthrough_.fetch_add(1, std::memory_order_relaxed);
    return CallReal(real_, op);
  }
  if (IsPointToPoint(op.func)) {
    rec->taken = true;
    return LaunchUngatedP2P(op, *rec->record);
  }
  CommLane* lane = LaneFor(op.state);
  if (lane == nullptr) {
    passthrough_.fetch_add(1, std::memory_order_relaxed);
    return CallReal(real_, op);
  }
  // LaunchGated falls back before anything is enqueued, leaving the record to the shim.
  absl::MutexLock lock(&lane->mu);
  const absl::Status in = dev_.RecordEvent(lane->in_event(), op.stream);
  const absl::Status wait = in.ok() ? dev_.StreamWaitEvent(lane->stream(), lane->in_event()) : in;
  if (!wait.ok()) {
    Fail(wait, "ordering the dedicated stream after the user stream");
    passthrough_.fetch_add(1, std::memory_order_relaxed);
    return CallReal(real_, op);
  }
  rec->taken = true;
  return LaunchGated(op, *lane, *rec->record);
}

void GatedLauncher::BeginIteration(int64_t iteration) { engine_->BeginIteration(iteration); }

GatedLauncher::Stats GatedLauncher::stats() const {
  Stats s;
  s.gated_tickets = gated_tickets_.load(std::memory_order_relaxed);
  s.ungated_tickets = ungated_tickets_.load(std::memory_order_relaxed);
  s.passthrough = passthrough_.load(std::memory_order_relaxed);
  s.watchdog_opens = watchdog_->opened();
  s.lanes_retiring = watchdog_->retiring();
  {
    absl::MutexLock lock(&lanes_mu_);
    s.lanes = lanes_.size() + s.lanes_retiring;
  }
  s.lanes_freed = watchdog_->lanes_freed();
  s.engine = engine_->stats();
  return s;
}

}  // namespace trirace::interpose
