// User groups (ncclGroupStart/End) under the gated launch: a per-thread
// state machine that decides the group's kind from its first op, issues
// every op at call time, and turns the outermost GroupEnd into one ticket.
#include <utility>

#include "common/clock.h"
#include "interpose/gated_launcher.h"

namespace trirace::interpose {

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

ncclResult_t GatedLauncher::LaunchInGroup(const Op& op, OpRecording* rec) {
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
    absl::Status st = dev_.RecordEvent(lane.in_event(), s);
    if (st.ok()) st = dev_.StreamWaitEvent(lane.stream(), lane.in_event());
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
  if (absl::Status s = dev_.LaunchHostFunc(lane.stream(), &TicketDoneCallback, t); !s.ok()) {
    Fail(s, "queueing a completion callback");
    TicketDone(t);
  }
  absl::Status done = dev_.RecordEvent(lane.done_event(), lane.stream());
  for (device::StreamHandle s : g.streams) {
    if (done.ok()) done = dev_.StreamWaitEvent(s, lane.done_event());
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
    if (absl::Status st = dev_.LaunchHostFunc(s, &TicketDoneCallback, t); !st.ok()) {
      Fail(st, "queueing a completion callback");
      TicketDone(t);
    }
  }
}

}  // namespace trirace::interpose
