#include "interpose/gated_launcher.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/params.h"
#include "interpose/engine_factory.h"
#include "scheduler/chunk_planner.h"

namespace trirace::interpose {
namespace {

void OnUnitDone(void* p) {
  auto* t = static_cast<GateTicket*>(p);
  t->launcher->UnitDone(t);
}

const void* Advance(const void* p, size_t bytes) {
  return p == nullptr ? nullptr : static_cast<const char*>(p) + bytes;
}
void* Advance(void* p, size_t bytes) { return p == nullptr ? nullptr : static_cast<char*>(p) + bytes; }

// Stamps the first opening of a ticket's gate.
void MarkRelease(GateTicket* t, sched::ReleaseReason reason) {
  int64_t unset = 0;
  const int64_t now = MonotonicNs();
  if (t->release_ns.compare_exchange_strong(unset, now, std::memory_order_acq_rel)) {
    t->reason = static_cast<int16_t>(reason);
  }
}

}  // namespace

struct GatedLauncher::Group {
  enum class Kind { kNone, kPassthrough, kGated, kP2P };
  Kind kind = Kind::kNone;
  CommLane* lane = nullptr;
  CommState* state = nullptr;
  std::vector<device::StreamHandle> streams;  // user streams involved, once each
  std::vector<TraceRecord> records;           // taken records, in call order
  TrafficClass traffic_class = TrafficClass::kDense;
  uint64_t bytes = 0;
  TraceRecord first;  // the first op's record: tag and comm for the task

  void AddStream(cudaStream_t s) {
    for (device::StreamHandle x : streams) {
      if (x == s) return;
    }
    streams.push_back(s);
  }
};

namespace {
thread_local GatedLauncher::Group t_group_state;  // the calling thread's outermost user group
}  // namespace

void Arrive(GateTicket* t, uint32_t bit) {
  constexpr uint32_t kBoth = GateTicket::kReleased | GateTicket::kDone;
  const uint32_t before = t->arrived.fetch_or(bit, std::memory_order_acq_rel);
  const uint32_t after = before | bit;
  if ((bit & kBoth) != 0 && (after & kBoth) == kBoth && (before & kBoth) != kBoth) {
    // Fails only for a task the engine already dropped at shutdown.
    t->launcher->engine().Complete(t->task).IgnoreError();
  }
  if (after == GateTicket::kAll) delete t;
}

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

GatedLauncher::GatedLauncher(const RealNccl& real, RecordSink* sink, std::unique_ptr<device::Device> dev)
    : real_(real), sink_(sink), dev_(std::move(dev)) {}

GatedLauncher::~GatedLauncher() { Shutdown(); }

absl::StatusOr<std::unique_ptr<GatedLauncher>> GatedLauncher::Create(const RealNccl& real, RecordSink* sink) {
  if (const char* conns = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"); conns != nullptr && std::atoi(conns) == 1) {
    return absl::FailedPreconditionError(
        "CUDA_DEVICE_MAX_CONNECTIONS=1 gives the GPU one hardware queue, where a closed gate would stall every "
        "stream");
  }
  absl::StatusOr<std::unique_ptr<device::Device>> dev = device::SelectDevice(real.handle);
  if (!dev.ok()) return dev.status();
  std::unique_ptr<GatedLauncher> l(new GatedLauncher(real, sink, *std::move(dev)));
  l->links_ = std::make_unique<sched::NicLinkModel>(sched::NicLinkModel::Options::FromParams());
  l->local_links_ = l->links_->LinksFor({});  // peers unknown: the op leaves through the local NIC
  absl::StatusOr<std::unique_ptr<sched::Engine>> engine = MakeEngineFromParams(l.get(), *l->links_);
  if (!engine.ok()) return engine.status();
  l->engine_ = *std::move(engine);
  l->watchdog_ = std::make_unique<GateWatchdog>(
      l->engine_->options().max_hold_ns, [](GateTicket* t) { MarkRelease(t, sched::ReleaseReason::kMaxHold); });
  if (absl::Status s = l->watchdog_->Start(); !s.ok()) return s;
  l->chunk_bytes_ = static_cast<uint64_t>(ParamInt(ParamId::kChunkBytes));
  std::string bad;
  l->excluded_roles_ = ParseExcludedRoles(ParamString(ParamId::kExcludeRoles), &bad);
  if (!bad.empty()) {
    TRIRACE_WARN(INTERPOSE, "TRIRACE_EXCLUDE_ROLES=\"%s\": unknown role(s) %s ignored; accepted: data-parallel, "
                 "pipeline, tensor, expert, unknown", ParamString(ParamId::kExcludeRoles), bad);
  }
  TRIRACE_INFO(INTERPOSE, "schedule mode: gated launch on the %s device backend, policy %s, hold bound %d us, "
               "chunks above %d bytes", l->dev_->name(), std::string(l->engine_->policy_name()),
               l->engine_->options().max_hold_ns / 1000, l->chunk_bytes_);
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
  TRIRACE_INFO(INTERPOSE, "schedule mode (%s policy): %d gated units, %d ungated, %d ops passed through; "
               "%d released at the hold bound by the engine, %d by the watchdog; longest hold %.3f ms; engine "
               "thread CPU %.3f ms", std::string(engine_->policy_name()), s.gated_units, s.ungated_units,
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
  absl::StatusOr<bool> capturing = dev_->IsCapturing(op.stream);
  return capturing.ok() && !*capturing;
}

CommLane* GatedLauncher::LaneFor(CommState* state) {
  if (CommLane* l = state->lane.load(std::memory_order_acquire)) return l;
  std::lock_guard<std::mutex> lock(lanes_mu_);
  if (CommLane* l = state->lane.load(std::memory_order_acquire)) return l;
  absl::StatusOr<std::unique_ptr<CommLane>> lane = CommLane::Create(*dev_, state);
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

GateTicket* GatedLauncher::NewTicket(CommLane* lane, CommState* state) {
  auto* t = new GateTicket;
  t->launcher = this;
  t->lane = lane;
  t->state = state;
  return t;
}

sched::TaskSpec GatedLauncher::SpecFor(const TraceRecord& base, uint64_t bytes, const CommLane* lane) const {
  sched::TaskSpec spec;
  spec.comm = lane != nullptr ? lane->comm()->id : 0;
  spec.traffic_class = static_cast<TrafficClass>(base.op_class);
  spec.bytes = bytes;
  spec.links = local_links_;
  spec.tag.layer = base.tag.layer;
  spec.tag.stage = base.tag.stage;
  spec.tag.micro_batch = base.tag.micro_batch;
  spec.tag.phase = base.tag.phase;
  spec.tag.iteration = base.tag.iteration;
  spec.tag.priority = base.tag.priority;
  return spec;
}

bool GatedLauncher::Submit(GateTicket* t, sched::TaskSpec spec, int64_t call_ns) {
  if (t->state != nullptr) spec.comm = t->state->id;
  spec.cookie = reinterpret_cast<uint64_t>(t);
  spec.gated = t->gated;
  spec.chunk_index = t->chunk_index;
  spec.chunk_count = t->chunk_count;
  t->arrived.store(t->gated ? 0 : GateTicket::kReleased | GateTicket::kWatched, std::memory_order_relaxed);
  (t->gated ? gated_units_ : ungated_units_).fetch_add(1, std::memory_order_relaxed);
  t->task = engine_->ReserveId();
  engine_->Submit(std::move(spec), t->task);
  if (!t->gated) return true;
  if ((t->arrived.load(std::memory_order_acquire) & GateTicket::kReleased) != 0) {
    // Released inside Submit: no gate to put on the stream, nothing to watch.
    // (The ticket lives on: its completion callback is not queued yet.)
    Arrive(t, GateTicket::kWatched);
    return true;
  }
  watchdog_->Watch(t->lane, t, call_ns);
  return false;
}

void GatedLauncher::OpenGate(const sched::ReleasedTask& task) {
  auto* t = reinterpret_cast<GateTicket*>(task.cookie);
  if (t == nullptr) return;
  if (t->gated) {
    MarkRelease(t, task.reason);
    OpenGateWord(t->lane->gates(), t->slot, t->value);
  }
  Arrive(t, GateTicket::kReleased);
}

void GatedLauncher::UnitDone(GateTicket* t) {
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
  if (op.group_id != 0) {
    Group& g = t_group_state;
    if (g.kind == Group::Kind::kNone) {
      g.kind = Group::Kind::kPassthrough;
      if (CanGate(op)) {
        if (IsPointToPoint(op.func)) {
          g.kind = Group::Kind::kP2P;
        } else if ((g.lane = LaneFor(op.state)) != nullptr) {
          g.kind = Group::Kind::kGated;
        }
      }
      g.state = op.state;
      g.first = *rec->record;
      g.traffic_class = static_cast<TrafficClass>(rec->record->op_class);
    }
    if (g.kind == Group::Kind::kPassthrough) {
      passthrough_.fetch_add(1, std::memory_order_relaxed);
      return CallReal(real_, op);
    }
    Op issued = op;
    if (g.kind == Group::Kind::kGated && CanGate(op) && op.state->device == g.lane->device()) {
      issued.stream = static_cast<cudaStream_t>(g.lane->stream());
    }
    const ncclResult_t r = CallReal(real_, issued);
    rec->taken = true;
    sink_->RecordStarted();
    g.records.push_back(*rec->record);
    g.records.back().result = r;
    g.AddStream(op.stream);
    g.bytes += op.bytes;
    g.traffic_class = MoreUrgent(g.traffic_class, static_cast<TrafficClass>(rec->record->op_class));
    return r;
  }
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
  std::lock_guard<std::mutex> lock(lane->mu);
  const absl::Status in = dev_->RecordEvent(lane->in_event(), op.stream);
  const absl::Status wait = in.ok() ? dev_->StreamWaitEvent(lane->stream(), lane->in_event()) : in;
  if (!wait.ok()) {
    Fail(wait, "ordering the dedicated stream after the user stream");
    passthrough_.fetch_add(1, std::memory_order_relaxed);
    return CallReal(real_, op);
  }
  rec->taken = true;
  return LaunchGated(op, *lane, *rec->record);
}

ncclResult_t GatedLauncher::LaunchGated(const Op& op, CommLane& lane, const TraceRecord& base) {
  const size_t es = DataTypeSize(op.datatype);
  sched::ChunkPlan plan;
  if (es != 0 && sched::IsChunkable(op.func)) {
    plan = sched::PlanChunks(op.func, op.count, es, chunk_bytes_);
  } else {
    plan.chunks.push_back({0, op.count});
  }
  const uint32_t n = static_cast<uint32_t>(plan.chunks.size());
  ncclResult_t result = ncclSuccess;
  for (uint32_t i = 0; i < n; ++i) {
    const sched::Chunk& c = plan.chunks[i];
    Op part = op;
    part.stream = static_cast<cudaStream_t>(lane.stream());
    part.count = c.count;
    part.sendbuff = Advance(op.sendbuff, c.offset * es);
    part.recvbuff = Advance(op.recvbuff, c.offset * es);
    GateTicket* t = NewTicket(&lane, op.state);
    t->chunk_index = i;
    t->chunk_count = n;
    t->gated = !failed() && lane.AcquireGate(&t->slot, &t->value);
    const uint64_t bytes = n > 1 ? c.count * es : op.bytes;
    // The task is registered first: when the policy releases it at once the
    // stream needs no gate.
    sink_->RecordStarted();
    if (!Submit(t, SpecFor(base, bytes, &lane), op.call_ns)) PutGate(lane, *t);
    const ncclResult_t r = CallReal(real_, part);
    TraceRecord rec = base;
    rec.result = r;
    rec.count = part.count;
    rec.bytes = bytes;
    rec.chunk_index = static_cast<int32_t>(i);
    rec.chunk_count = static_cast<int32_t>(n);
    t->records.push_back(rec);
    if (absl::Status s = dev_->LaunchHostFunc(lane.stream(), &OnUnitDone, t); !s.ok()) {
      Fail(s, "queueing a completion callback");
      UnitDone(t);
    }
    if (r != ncclSuccess) {
      result = r;
      break;
    }
  }
  const absl::Status done = dev_->RecordEvent(lane.done_event(), lane.stream());
  const absl::Status wait = done.ok() ? dev_->StreamWaitEvent(op.stream, lane.done_event()) : done;
  if (!wait.ok()) Fail(wait, "ordering the user stream after the dedicated stream");
  return result;
}

void GatedLauncher::PutGate(CommLane& lane, GateTicket& t) {
  if (absl::Status s = dev_->WaitGate(lane.stream(), lane.gates(), t.slot, t.value); !s.ok()) {
    // The task stays with the engine (and the watchdog); the stream just
    // does not wait for it.
    Fail(s, "putting a gate on the dedicated stream");
  }
}

ncclResult_t GatedLauncher::LaunchUngatedP2P(const Op& op, const TraceRecord& base) {
  const ncclResult_t r = CallReal(real_, op);
  GateTicket* t = NewTicket(nullptr, op.state);
  t->records.push_back(base);
  t->records.back().result = r;
  sink_->RecordStarted();
  Submit(t, SpecFor(base, op.bytes, nullptr), op.call_ns);
  if (absl::Status s = dev_->LaunchHostFunc(op.stream, &OnUnitDone, t); !s.ok()) {
    Fail(s, "queueing a completion callback");
    UnitDone(t);
  }
  return r;
}

ncclResult_t GatedLauncher::GroupStart(int depth_after) {
  if (real_.GroupStart == nullptr) return ncclInvalidUsage;
  const ncclResult_t r = real_.GroupStart();
  if (r == ncclSuccess && depth_after == 1) t_group_state = Group();
  return r;
}

ncclResult_t GatedLauncher::GroupEnd(int depth_after) {
  if (real_.GroupEnd == nullptr) return ncclInvalidUsage;
  if (depth_after > 0 || t_group_state.kind == Group::Kind::kNone) return real_.GroupEnd();
  Group g = std::move(t_group_state);
  t_group_state = Group();
  switch (g.kind) {
    case Group::Kind::kGated:
      return EndGatedGroup(g);
    case Group::Kind::kP2P: {
      const ncclResult_t r = real_.GroupEnd();
      EndUngatedGroup(g);
      return r;
    }
    default:
      return real_.GroupEnd();
  }
}

ncclResult_t GatedLauncher::GroupSimulateEnd(ncclSimInfo_t* info, int depth_after) {
  if (real_.GroupSimulateEnd == nullptr) return ncclInvalidUsage;
  const ncclResult_t r = real_.GroupSimulateEnd(info);
  if (depth_after > 0) return r;
  Group g = std::move(t_group_state);
  t_group_state = Group();
  // Nothing was launched: the taken records end now.
  for (TraceRecord& rec : g.records) {
    rec.end_ns = MonotonicNs();
    rec.completion = CompletionSource::kReturn;
    sink_->RecordFinished(rec, g.state);
  }
  return r;
}

ncclResult_t GatedLauncher::EndGatedGroup(Group& g) {
  CommLane& lane = *g.lane;
  std::lock_guard<std::mutex> lock(lane.mu);
  bool ordered = !failed();
  for (device::StreamHandle s : g.streams) {
    if (!ordered) break;
    absl::Status st = dev_->RecordEvent(lane.in_event(), s);
    if (st.ok()) st = dev_->StreamWaitEvent(lane.stream(), lane.in_event());
    if (!st.ok()) {
      Fail(st, "ordering the dedicated stream after the user streams of a group");
      ordered = false;
    }
  }
  GateTicket* t = NewTicket(&lane, g.state);
  t->gated = ordered && lane.AcquireGate(&t->slot, &t->value);
  t->records = std::move(g.records);
  sched::TaskSpec spec = SpecFor(g.first, g.bytes, &lane);
  spec.traffic_class = g.traffic_class;
  if (!Submit(t, std::move(spec), MonotonicNs())) PutGate(lane, *t);
  const ncclResult_t r = real_.GroupEnd();
  if (absl::Status s = dev_->LaunchHostFunc(lane.stream(), &OnUnitDone, t); !s.ok()) {
    Fail(s, "queueing a completion callback");
    UnitDone(t);
  }
  absl::Status done = dev_->RecordEvent(lane.done_event(), lane.stream());
  for (device::StreamHandle s : g.streams) {
    if (done.ok()) done = dev_->StreamWaitEvent(s, lane.done_event());
  }
  if (!done.ok()) Fail(done, "ordering the user streams after a group");
  return r;
}

void GatedLauncher::EndUngatedGroup(Group& g) {
  GateTicket* t = NewTicket(nullptr, g.state);
  t->records = std::move(g.records);
  t->streams_left.store(static_cast<int>(g.streams.size()), std::memory_order_relaxed);
  sched::TaskSpec spec = SpecFor(g.first, g.bytes, nullptr);
  spec.traffic_class = g.traffic_class;
  Submit(t, std::move(spec), MonotonicNs());
  for (device::StreamHandle s : g.streams) {
    if (absl::Status st = dev_->LaunchHostFunc(s, &OnUnitDone, t); !st.ok()) {
      Fail(st, "queueing a completion callback");
      UnitDone(t);
    }
  }
}

void GatedLauncher::BeginIteration(int64_t iteration) { engine_->BeginIteration(iteration); }

GatedLauncher::Stats GatedLauncher::stats() const {
  Stats s;
  s.gated_units = gated_units_.load(std::memory_order_relaxed);
  s.ungated_units = ungated_units_.load(std::memory_order_relaxed);
  s.passthrough = passthrough_.load(std::memory_order_relaxed);
  s.watchdog_opens = watchdog_->opened();
  s.engine = engine_->stats();
  return s;
}

}  // namespace trirace::interpose
