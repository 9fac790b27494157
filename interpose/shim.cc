#include "interpose/shim.h"

#include <unistd.h>

#include <cstdlib>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/abseil_runtime.h"
#include "common/clock.h"
#include "common/library_paths.h"
#include "common/logging.h"
#include "common/params.h"
#include "common/process_info.h"
#include "interpose/annotations.h"
#include "interpose/comm/user_group.h"
#include "interpose/gate/gated_launcher.h"
#include "interpose/nccl_api.h"
#include "interpose/start_verdict.h"
#include "interpose/trace/summary.h"
#include "nccl_adapter/nccl_result.h"

namespace trirace::interpose {

thread_local int ReentryGuard::depth_ = 0;

// An op waiting for its stream to reach it.
struct PendingOp {
  TraceRecord record;
  CommState* state;
  Shim* shim;
};

namespace {

std::atomic<Shim*> g_shim{nullptr};
ABSL_CONST_INIT absl::Mutex g_init_mutex(absl::kConstInit);  // serialises Create()
thread_local Shim* t_initializing = nullptr;

void AtExit() {
  if (Shim* s = g_shim.load(std::memory_order_acquire)) s->Shutdown();
}

}  // namespace

Shim& Shim::Get() {
  Shim* s = g_shim.load(std::memory_order_acquire);
  if (s != nullptr) [[likely]] return *s;
  if (t_initializing != nullptr) return *t_initializing;
  return *Create();
}

Shim* Shim::Create() {
  absl::MutexLock lock(&g_init_mutex);
  if (Shim* s = g_shim.load(std::memory_order_acquire)) return s;
  Shim* s = new Shim();  // lives for the process: exit hooks and stream callbacks use it
  t_initializing = s;
  s->Initialize();
  t_initializing = nullptr;
  g_shim.store(s, std::memory_order_release);
  return s;
}

void Shim::Initialize() {
  owner_pid_ = getpid();
  const std::string& library = ParamString(ParamId::kNcclLibrary);
  auto real = ResolveRealNccl(library);
  if (!real.ok()) {
    resolve_error_ = std::string(real.status().message());
    TRIRACE_WARN(INTERPOSE, "%s; every NCCL call returns an error", resolve_error_);
    return;
  }
  real_ = *std::move(real);
  {
    ReentryGuard guard;  // the real ncclGetVersion may call ours back
    if (real_->GetVersion(&version_) != ncclSuccess) version_ = 0;
  }
  TRIRACE_INFO(INTERPOSE, "real NCCL %s (code %d) at %s (%s)%s", NcclVersionText(version_), version_, real_->path,
               real_->how, real_->is_hostccl ? ", hostccl host streams" : "");
  if (const std::string why = WorldWritableReason(real_->path); !why.empty()) {
    TRIRACE_WARN(INTERPOSE, "the real NCCL %s: %s: anyone who can write there can run code in this job",
                 real_->path, why);
  }
  if (real_->missing > 0) {
    TRIRACE_INFO(INTERPOSE, "the real NCCL lacks %d of the %d functions of nccl.h %d.%d; their wrappers return "
                 "ncclInvalidUsage", real_->missing, kNcclApiFunctionCount, NCCL_MAJOR, NCCL_MINOR);
  }
  const NcclPlan nccl = PlanForNccl(version_);
  if (!nccl.schedulable) {
    TRIRACE_WARN(INTERPOSE, "%s: observe only (code %d)", nccl.why, version_);
  } else if (!nccl.config_layout_known) {
    TRIRACE_INFO(INTERPOSE, "%s: it schedules as usual (NCCL keeps its C API across %d.x) but leaves ncclConfig_t "
                 "as the caller made it (no trafficClass per role: a newer release may have changed its layout)",
                 nccl.why, NCCL_MAJOR);
  }
  const ShimMode requested = ParamChoice<ShimMode>();
  shapes_comm_config_ = requested == ShimMode::kSchedule && nccl.schedulable && nccl.config_layout_known;
  absl::Status device_status = absl::OkStatus();
  if (requested != ShimMode::kOff) {
    absl::StatusOr<std::unique_ptr<device::Device>> dev = device::SelectDevice(real_->handle);
    if (dev.ok()) {
      device_ = *std::move(dev);
      watcher_ = std::make_unique<StreamWatcher>(*device_);
    } else {
      device_status = dev.status();
      TRIRACE_INFO(TRACE, "trace slices end at the call's return: %s", device_status.ToString());
    }
  }
  verdict_ = DecideStart(requested, ParamChoice<PolicyKind>(), nccl, device_status, GatedLaunchPrecondition());
  if (verdict_.mode == ShimMode::kSchedule) {
    absl::StatusOr<std::unique_ptr<GatedLauncher>> gated = GatedLauncher::Create(*real_, this, *device_, *watcher_);
    if (gated.ok()) {
      verdict_.occupancy = (*gated)->occupancy_input();
      verdict_.class_order = ClassOrderText(verdict_.policy, HostMarksFinding());
      launcher_ = *std::move(gated);
    } else {
      verdict_.mode = ShimMode::kObserve;
      verdict_.why = std::string(gated.status().message());
    }
  }
  if (verdict_.mode != requested) {
    TRIRACE_WARN(INTERPOSE, "TRIRACE_MODE=schedule: %s; running in observe mode (no op is gated)", verdict_.why);
  }
  mode_ = verdict_.mode;
  if (launcher_ == nullptr) launcher_ = std::make_unique<ObserveLauncher>(*real_);
  if (mode_ == ShimMode::kOff) return;  // pure forwarding: no trace, no exit hook
  ConfigureAbseilRuntime();  // every intercepted op locks (common/abseil_runtime.h)

  const std::string& trace = ParamString(ParamId::kTrace);
  if (!trace.empty()) {
    TraceWriter::Options options;
    options.path_pattern = trace;
    options.buffer_bytes = static_cast<size_t>(ParamInt(ParamId::kTraceBufferMb)) << 20;
    options.info = {{"producer", "TriRace libtrirace.so"},
                    {"mode", ParamEnum(ParamId::kMode)},
                    {"nccl", absl::StrCat(NcclVersionText(version_), " ", real_->path)},
                    {"completion", device_ != nullptr ? "stream" : "return"},
                    {"verdict", VerdictLine(verdict_, LauncherWorldSize().value_or(0))}};
    options.on_failure = [this](const std::string& why) { Disable(absl::StrCat("trace: ", why)); };
    options.in_flight = [this] { return in_flight_.load(std::memory_order_relaxed); };
    auto writer = TraceWriter::Start(std::move(options), &registry_);
    if (!writer.ok()) {
      TRIRACE_WARN(INTERPOSE, "TRIRACE_TRACE=\"%s\": %s; the shim only forwards from now on", trace,
                   writer.status().message());
      return;
    }
    trace_ = *std::move(writer);
  }
  StartMetrics();
  if (std::atexit(AtExit) != 0) {
    TRIRACE_WARN(INTERPOSE, "cannot register the exit hook; the shim only forwards from now on");
    return;
  }
  recording_.store(true, std::memory_order_relaxed);
}

ncclResult_t Shim::Unavailable(const char* function) {
  bool first = false;
  {
    absl::MutexLock lock(&warned_mutex_);
    first = warned_unavailable_.emplace(function, true).second;
  }
  if (real_ == nullptr) {
    if (first) TRIRACE_WARN(INTERPOSE, "%s: no real NCCL to forward to (%s)", function, resolve_error_);
    return ToNcclResult(absl::NotFoundError(resolve_error_));
  }
  if (first) {
    TRIRACE_WARN(INTERPOSE, "%s: the real NCCL %s at %s does not provide this function", function,
                 NcclVersionText(version_), real_->path);
  }
  return ToNcclResult(absl::UnimplementedError(function));
}

const char* Shim::UnavailableText() const {
  return "TriRace: no real NCCL library found (set TRIRACE_NCCL_LIBRARY; see the TriRace WARN)";
}

void Shim::Disable(const std::string& why) {
  if (disabled_.exchange(true)) return;
  recording_.store(false, std::memory_order_relaxed);
  {
    absl::MutexLock lock(&disable_mutex_);
    disable_reason_ = why;
  }
  TRIRACE_WARN(INTERPOSE, "internal failure: %s; the shim only forwards from now on", why);
}

ncclResult_t Shim::IssueOp(Op& op) {
  ReentryGuard guard;
  op.state = registry_.Find(op.comm);
  if (ncclResult_t refused = ncclSuccess; RefuseOp(op, &refused)) [[unlikely]] return refused;  // sets op.bytes
  op.tag = CurrentTag();
  UserGroup& group = ThisThreadGroup();
  op.group = group.depth() > 0 ? &group : nullptr;
  if (op.state != nullptr) op.seq = op.state->next_seq.fetch_add(1, std::memory_order_relaxed);
  op.call_ns = MonotonicNs();

  const int role = op.state != nullptr ? EffectiveRole(*op.state, nullptr) : TRIRACE_ROLE_UNKNOWN;
  const TrafficClass op_class = ClassifyOp(op.func, role, op.tag.traffic_class);
  TraceRecord r;
  r.kind = RecordKind::kOp;
  r.func = op.func;
  r.op_class = static_cast<uint8_t>(op_class);
  r.datatype = op.datatype;
  r.redop = op.redop;
  r.peer_or_root = op.peer_or_root;
  r.comm_index = op.state != nullptr ? op.state->index : 0;
  r.thread_id = ThreadId();
  r.count = op.count;
  r.bytes = op.bytes;
  r.seq = op.seq;
  r.group_id = op.group_id();
  r.start_ns = op.call_ns;
  r.tag = op.tag;

  OpRecording recording{&r, false};
  const ncclResult_t result = launcher_->Launch(op, &recording);
  r.result = result;
  if (op.state != nullptr) CountOp(op.state->stats, op.func, op_class, op.bytes);
  const bool tracked = device_ != nullptr && result == ncclSuccess;
  if (op.group != nullptr && (recording.taken || tracked)) {
    // Grouped ops reach their streams at the outermost ncclGroupEnd, which
    // finishes or tracks their records (EndGroup).
    if (!recording.taken) in_flight_.fetch_add(1, std::memory_order_relaxed);
    open_group_ops_.fetch_add(1, std::memory_order_relaxed);
    op.group->Add({r, op.state, op.stream, recording.taken});
    return result;
  }
  if (recording.taken) return result;  // the launcher finishes it at the op's completion
  if (tracked) {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    TrackCompletion(r, op.state, op.stream);
    return result;
  }
  r.end_ns = MonotonicNs();
  FinishOp(r, op.state);
  return result;
}

void Shim::TrackCompletion(const TraceRecord& record, CommState* state, cudaStream_t stream) {
  auto* pending = new (std::nothrow) PendingOp{record, state, this};
  if (pending == nullptr) {
    Disable("out of memory for an op record");
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  pending->record.completion = CompletionSource::kStream;
  // An event recorded on a stream under graph capture would become a node
  // of the graph, and the watcher's wait would join its stream to the capture.
  const absl::StatusOr<bool> capturing =
      device_ != nullptr ? device_->IsCapturing(stream) : absl::StatusOr<bool>(true);
  if (!capturing.ok() || *capturing || !watcher_->Watch(stream, state, &Shim::OnStreamDone, pending).ok()) {
    pending->record.completion = CompletionSource::kReturn;
    OnStreamDone(pending);
  }
}

void Shim::OnStreamDone(void* p) {
  std::unique_ptr<PendingOp> pending(static_cast<PendingOp*>(p));
  pending->record.end_ns = MonotonicNs();
  Shim* shim = pending->shim;
  shim->FinishOp(pending->record, pending->state);
  // After the record is written: the exit drain reads 0 only once it is in.
  shim->in_flight_.fetch_sub(1, std::memory_order_release);
}

void Shim::RecordFinished(TraceRecord& record, CommState* state) {
  FinishOp(record, state);
  in_flight_.fetch_sub(1, std::memory_order_release);
}

void Shim::RecordEvent(const TraceRecord& record) {
  if (trace_ != nullptr && recording_.load(std::memory_order_relaxed)) trace_->Record(record);
}

void Shim::FinishOp(TraceRecord& record, CommState* state) {
  if (metrics_ != nullptr) gate_counters_.Add(record);  // read by the metrics file only
  if (state != nullptr) {
    state->stats.in_flight_ns.fetch_add(record.end_ns - record.start_ns, std::memory_order_relaxed);
  }
  if (trace_ != nullptr) trace_->Record(record);
}

ncclResult_t Shim::GroupStart() {
  ReentryGuard guard;
  const ncclResult_t r = launcher_->GroupStart();
  if (r == ncclSuccess) {
    UserGroup& group = ThisThreadGroup();
    if (group.depth() == 0) open_groups_.fetch_add(1, std::memory_order_relaxed);
    group.Enter(group.depth() == 0 ? next_group_id_.fetch_add(1, std::memory_order_relaxed) + 1 : group.id());
  }
  return r;
}

ncclResult_t Shim::GroupEnd() {
  ReentryGuard guard;
  UserGroup& group = ThisThreadGroup();
  const bool closed = group.Leave();
  const ncclResult_t r = launcher_->GroupEnd(group);
  if (closed) {
    ResolveGroupCreations(group, r);
    EndGroup(group, /*launched=*/r == ncclSuccess);
  }
  return r;
}

ncclResult_t Shim::GroupSimulateEnd(ncclSimInfo_t* info) {
  ReentryGuard guard;
  UserGroup& group = ThisThreadGroup();
  const bool closed = group.Leave();
  const ncclResult_t r = launcher_->GroupSimulateEnd(info, group);
  if (closed) {
    ResolveGroupCreations(group, r);
    EndGroup(group, /*launched=*/false);
  }
  return r;
}

void Shim::ResolveGroupCreations(UserGroup& group, ncclResult_t result) {
  const std::vector<ncclComm_t*>& slots = group.pending_comms();
  if (slots.empty()) return;
  for (ncclComm_t* slot : slots) ledger_.Created(slot, 1);  // NCCL has written them by now, or never will
  ledger_.GroupEnded(static_cast<int>(slots.size()), /*later=*/result == ncclInProgress);
}

void Shim::EndGroup(UserGroup& group, bool launched) {
  open_groups_.fetch_sub(1, std::memory_order_relaxed);
  open_group_ops_.fetch_sub(group.ops().size(), std::memory_order_relaxed);
  // Comms the group created are initialised now (when it succeeded).
  const std::vector<CommState*> created = launched ? group.created_comms() : std::vector<CommState*>();
  for (GroupOp& op : group.ops()) {
    if (op.taken) continue;  // the launcher finished or will finish it
    if (launched) {
      TrackCompletion(op.record, op.state, op.stream);
    } else {
      op.record.end_ns = MonotonicNs();
      op.record.completion = CompletionSource::kReturn;
      RecordFinished(op.record, op.state);
    }
  }
  group.Reset();
  if (!created.empty()) launcher_->CommsReady(created);
}

CommState* Shim::OnCommCreated(const NewComm& c, int64_t start_ns, ncclResult_t result) {
  CommState* registered_state = nullptr;
  if ((result == ncclSuccess || result == ncclInProgress) && c.comm != nullptr) {
    auto state = std::make_unique<CommState>();
    state->comm = c.comm;
    state->id = c.id;
    state->parent_id = c.parent_id;
    state->rank = c.rank;
    state->nranks = c.nranks;
    state->device = c.device;
    state->created_by = CommCallName(c.call);
    state->nonblocking = c.nonblocking;
    // Called on the creating thread: the role it declared for new comms.
    const int role = NewCommRole();
    if (role != TRIRACE_ROLE_UNKNOWN) state->annotated_role.store(role, std::memory_order_relaxed);
    auto registered = registry_.Register(std::move(state));
    if (registered.ok()) {
      registered_state = *registered;
      LogVerdictOnce(*registered_state);
      TRIRACE_INFO(INTERPOSE, "comm %d id %s: rank %d of %d, device %d, from %s%s%s%s%s%s%s",
                   registered_state->index, CommIdHex(c.id), c.rank, c.nranks, c.device, CommCallName(c.call),
                   c.parent_id != 0 ? " of " : "", c.parent_id != 0 ? CommIdHex(c.parent_id) : "",
                   role != TRIRACE_ROLE_UNKNOWN ? "; role " : "", role != TRIRACE_ROLE_UNKNOWN ? RoleName(role) : "",
                   c.traffic_class >= 0 ? ", trafficClass " : "",
                   c.traffic_class >= 0 ? absl::StrCat(c.traffic_class) : "");
    } else {
      TRIRACE_WARN_ONCE(INTERPOSE, "%s; ops on further comms are forwarded but not attributed",
                        registered.status().message());
    }
  }
  RecordCommEvent(c.call, registered_state, start_ns, result);
  return registered_state;
}

void Shim::LogVerdictOnce(const CommState& first) {
  if (verdict_logged_.exchange(true, std::memory_order_relaxed)) return;
  const std::optional<int> launcher_rank = LauncherRank();
  if (launcher_rank.value_or(first.rank) != 0) return;
  TRIRACE_NOTE(INIT, "%s", VerdictLine(verdict_, LauncherWorldSize().value_or(first.nranks)));
}

void Shim::OnCommsReady(std::span<CommState* const> states) {
  if (states.empty() || launcher_ == nullptr) return;
  UserGroup& group = ThisThreadGroup();
  if (group.depth() > 0) {
    for (CommState* s : states) group.AddCreatedComm(s);
    return;
  }
  launcher_->CommsReady(states);
}

CommState* Shim::OnCommRemoving(ncclComm_t comm) {
  CommState* s = registry_.Remove(comm);
  if (s != nullptr) return s;
  absl::MutexLock lock(&finalized_mutex_);
  auto it = finalized_.find(comm);
  if (it == finalized_.end()) return nullptr;
  s = it->second;
  finalized_.erase(it);
  return s;
}

void Shim::OnCommRemoved(CommCall call, CommState* state, int64_t start_ns, ncclResult_t result) {
  if (call == CommCall::kFinalize && state != nullptr) {
    absl::MutexLock lock(&finalized_mutex_);
    finalized_[state->comm] = state;
  }
  // The comm is gone: its lane and watch queue go once drained (CommState
  // itself stays, for Find's callers and the exit summary).
  if (call != CommCall::kFinalize && state != nullptr && result == ncclSuccess) {
    if (launcher_ != nullptr) launcher_->CommRemoved(state);
    if (watcher_ != nullptr) watcher_->Forget(state);
  }
  RecordCommEvent(call, state, start_ns, result);
  if (state != nullptr && registry_.live() == 0) {
    LogSummaries(registry_, /*include_live=*/false);
    if (trace_ != nullptr) trace_->Wake();
  }
}

void Shim::OnCommCall(CommCall call, ncclComm_t comm, int64_t start_ns, ncclResult_t result) {
  RecordCommEvent(call, registry_.Find(comm), start_ns, result);
}

void Shim::RecordCommEvent(CommCall call, const CommState* state, int64_t start_ns, ncclResult_t result) {
  if (trace_ == nullptr) return;
  TraceRecord r;
  r.kind = RecordKind::kCommEvent;
  r.comm_call = call;
  r.result = result;
  r.thread_id = ThreadId();
  r.comm_index = state != nullptr ? state->index : 0;
  r.start_ns = start_ns;
  r.end_ns = MonotonicNs();
  trace_->Record(r);
}

bool Shim::SetCommRole(ncclComm_t comm, int role) {
  CommState* s = registry_.Find(comm);
  if (s == nullptr) {
    TRIRACE_WARN(INTERPOSE, "trirace_set_comm_role: comm %p is not a communicator the shim knows (not created "
                 "through it, already destroyed, or TRIRACE_MODE=off); ignored", static_cast<void*>(comm));
    return false;
  }
  s->annotated_role.store(role, std::memory_order_relaxed);
  return true;
}

void Shim::RecordIteration(int64_t iteration, bool begin) {
  if (begin && launcher_ != nullptr && recording_.load(std::memory_order_relaxed)) {
    launcher_->BeginIteration(iteration);
  }
  if (trace_ == nullptr || !recording_.load(std::memory_order_relaxed)) return;
  TraceRecord r;
  r.kind = begin ? RecordKind::kIterationBegin : RecordKind::kIterationEnd;
  r.iteration = iteration;
  r.start_ns = r.end_ns = MonotonicNs();
  r.thread_id = ThreadId();
  trace_->Record(r);
}

void Shim::Shutdown() {
  if (shut_down_.exchange(true)) return;
  // A forked child has the parent's memory but none of its threads: the
  // engine's and watchdog's mutexes may be held for ever and there is
  // nothing to join or drain. Its trace is the parent's to close.
  if (getpid() != owner_pid_) return;
  if (launcher_ != nullptr) launcher_->Shutdown();  // opens every gate still closed
  // A group begun and never ended: NCCL never ran its calls, and their
  // records never end.
  const int64_t open_groups = open_groups_.load(std::memory_order_relaxed);
  const uint64_t never_run = open_group_ops_.load(std::memory_order_relaxed);
  if (open_groups > 0 && !disabled_.load(std::memory_order_relaxed)) {
    TRIRACE_WARN(INTERPOSE, "exit with %d NCCL group(s) still open (ncclGroupStart without its ncclGroupEnd): the %d "
                 "call(s) made in them never ran", open_groups, never_run);
  }
  // Completions arrive on the watcher's driver threads, after the stream
  // point the application synchronised on: give those already due a moment
  // to land in the trace. Bounded, so an exit with work truly unfinished
  // (a killed peer, no synchronise) is not held.
  const absl::Time drain_end = absl::Now() + kExitDrain;
  while (in_flight_.load(std::memory_order_acquire) > never_run && absl::Now() < drain_end) {
    absl::SleepFor(absl::Microseconds(200));
  }
  LogSummaries(registry_, /*include_live=*/true);
  if (metrics_ != nullptr) metrics_->Stop();  // the last write, with every count
  if (trace_ != nullptr) {
    trace_->Close();
    const std::string path = trace_->path();
    if (!path.empty()) TRIRACE_INFO(TRACE, "trace written to %s", path);
  }
}

}  // namespace trirace::interpose
