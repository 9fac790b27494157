// User groups (ncclGroupStart/End) under the gated launch: the group's
// gating is decided by its first op (UserGroup::gating), every op is issued
// at call time, and the outermost GroupEnd turns the taken records (those
// of the ops that could be gated) into one ticket.
#include <algorithm>
#include <utility>

#include "common/clock.h"
#include "interpose/gate/gated_launcher.h"

namespace trirace::interpose {

// The records a closed group's ops left to the launcher, moved out of the
// group, with what its one scheduler task needs.
struct GatedLauncher::TakenGroup {
  std::vector<TraceRecord> records;           // in call order
  std::vector<device::StreamHandle> streams;  // the callers' streams, once each
  std::vector<CommState*> stream_comms;       // the comm of streams[i]'s first op (never nullptr)
  CommState* state = nullptr;                 // the first op's comm
  TraceRecord first;                          // the first op's record: tag and comm for the task
  TrafficClass traffic_class = TrafficClass::kDense;
  uint64_t bytes = 0;
  bool receives = false;  // some op is not a send
  std::vector<sched::LinkId> links;  // every op's, once each

  TakenGroup(UserGroup& g, const OpLinks& op_links) {
    for (GroupOp& op : g.ops()) {
      if (!op.taken) continue;
      for (sched::LinkId l : op_links.For(op.state, op.record.func, op.record.peer_or_root)) {
        if (std::find(links.begin(), links.end(), l) == links.end()) links.push_back(l);
      }
      const auto op_class = static_cast<TrafficClass>(op.record.op_class);
      if (records.empty()) {
        state = op.state;
        first = op.record;
        traffic_class = op_class;
      }
      traffic_class = MoreUrgent(traffic_class, op_class);
      bytes += op.record.bytes;
      receives = receives || op.record.func != NcclFunc::kSend;
      bool known = false;
      for (device::StreamHandle s : streams) known = known || s == op.stream;
      if (!known) {
        streams.push_back(op.stream);
        stream_comms.push_back(op.state);
      }
      records.push_back(std::move(op.record));
    }
  }
};

ncclResult_t GatedLauncher::LaunchInGroup(const Op& op, OpRecording* rec) {
  UserGroup& g = *op.group;
  const bool can_gate = CanGate(op);
  if (g.gating == GroupGating::kUndecided) {
    g.gating = GroupGating::kPassthrough;
    if (can_gate) {
      if (IsPointToPoint(op.func)) {
        g.gating = GroupGating::kP2P;
      } else if ((g.lane = LaneFor(op.state)) != nullptr) {
        g.gating = GroupGating::kGated;
      }
    }
  }
  // A later op that cannot be gated (a stream under capture, an unknown,
  // nonblocking or excluded comm) is not taken either: its stream must not
  // be ordered into the lane nor watched, and the shim tracks its record
  // as an observe-mode op. NCCL's group still joins its stream to the rest.
  if (g.gating == GroupGating::kPassthrough || !can_gate) {
    passthrough_.fetch_add(1, std::memory_order_relaxed);
    return CallReal(real_, op);
  }
  Op issued = op;
  if (g.gating == GroupGating::kGated && op.state->device == g.lane->device()) {
    // Ordered after the caller's stream now, not only at the group's end:
    // NCCL runs some ops at call time even inside a group (a one-rank
    // comm's collectives are a copy on the given stream), and such an op
    // must not overtake the work the caller queued before it.
    absl::MutexLock lock(&g.lane->mu);
    absl::Status st = dev_.RecordEvent(g.lane->in_event(), op.stream);
    if (st.ok()) st = dev_.StreamWaitEvent(g.lane->stream(), g.lane->in_event());
    if (st.ok()) {
      issued.stream = static_cast<cudaStream_t>(g.lane->stream());
    } else {
      Fail(st, "ordering the dedicated stream after the user stream of a group's op");
    }
  }
  const ncclResult_t r = CallReal(real_, issued);
  rec->taken = true;  // the shim adds it to the group; GroupEnd ends it
  sink_->RecordStarted();
  return r;
}

ncclResult_t GatedLauncher::GroupStart() {
  return real_.GroupStart != nullptr ? real_.GroupStart() : ncclInvalidUsage;
}

ncclResult_t GatedLauncher::GroupEnd(UserGroup& g) {
  if (real_.GroupEnd == nullptr) return ncclInvalidUsage;
  if (g.depth() > 0) return real_.GroupEnd();
  switch (g.gating) {
    case GroupGating::kGated: {
      TakenGroup taken(g, *links_);
      return EndGatedGroup(taken, *g.lane);
    }
    case GroupGating::kP2P: {
      TakenGroup taken(g, *links_);
      GateTicket* t = NewTicket(nullptr, taken.state);
      for (device::StreamHandle s : taken.streams) StampStart(t, s);  // before the group's work
      const ncclResult_t r = real_.GroupEnd();
      EndUngatedGroup(taken, t);
      return r;
    }
    default:
      return real_.GroupEnd();
  }
}

ncclResult_t GatedLauncher::GroupSimulateEnd(ncclSimInfo_t* info, UserGroup& g) {
  if (real_.GroupSimulateEnd == nullptr) return ncclInvalidUsage;
  const ncclResult_t r = real_.GroupSimulateEnd(info);
  if (g.depth() > 0) return r;
  // Nothing was launched: the taken records end now.
  for (GroupOp& op : g.ops()) {
    if (!op.taken) continue;
    op.record.end_ns = MonotonicNs();
    op.record.completion = CompletionSource::kReturn;
    sink_->RecordFinished(op.record, op.state);
  }
  return r;
}

ncclResult_t GatedLauncher::EndGatedGroup(TakenGroup& g, CommLane& lane) {
  absl::MutexLock lock(&lane.mu);
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
  sched::TaskSpec spec = SpecFor(g.first, g.bytes, g.state);
  spec.traffic_class = g.traffic_class;
  spec.links = std::move(g.links);
  spec.receives = g.receives;
  if (!Submit(t, std::move(spec), MonotonicNs())) PutGate(lane, *t);
  const ncclResult_t r = real_.GroupEnd();
  if (absl::Status s = watcher_.Watch(lane.stream(), g.state, &TicketDoneCallback, t); !s.ok()) {
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

void GatedLauncher::EndUngatedGroup(TakenGroup& g, GateTicket* t) {
  t->records = std::move(g.records);
  t->streams_left.store(static_cast<int>(g.streams.size()), std::memory_order_relaxed);
  sched::TaskSpec spec = SpecFor(g.first, g.bytes, g.state);
  spec.traffic_class = g.traffic_class;
  spec.links = std::move(g.links);
  spec.receives = g.receives;
  Submit(t, std::move(spec), MonotonicNs());
  for (size_t i = 0; i < g.streams.size(); ++i) {
    if (absl::Status st = watcher_.Watch(g.streams[i], g.stream_comms[i], &TicketDoneCallback, t); !st.ok()) {
      Fail(st, "queueing a completion callback");
      TicketDone(t);
    }
  }
}

}  // namespace trirace::interpose
