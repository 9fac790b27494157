// The gated launch of one op outside a user group: split into chunks by
// the deterministic planner, each behind its own gate on the comm's
// dedicated stream; and Send/Recv, issued on the user stream ungated.
#include <utility>

#include "common/clock.h"
#include "interpose/gate/gated_launcher.h"
#include "scheduler/chunk_planner.h"

namespace trirace::interpose {
namespace {

const void* Advance(const void* p, size_t bytes) {
  return p == nullptr ? nullptr : static_cast<const char*>(p) + bytes;
}
void* Advance(void* p, size_t bytes) { return p == nullptr ? nullptr : static_cast<char*>(p) + bytes; }

}  // namespace

ncclResult_t GatedLauncher::LaunchGated(const Op& op, CommLane& lane, const TraceRecord& base) {
  const size_t es = DataTypeSize(op.datatype);
  sched::ChunkPlan plan;
  const ChunkRule rule = ChunkRuleOf(op.state);
  if (es != 0 && sched::IsChunkable(op.func) && (rule.float_reductions || SplitIsExact(op))) {
    plan = sched::PlanChunks(op.func, op.count, es, rule.bytes);
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
    if (!Submit(t, SpecFor(base, bytes, lane.comm()), op.call_ns)) PutGate(lane, *t);
    const ncclResult_t r = CallReal(real_, part);
    TraceRecord rec = base;
    rec.result = r;
    rec.count = part.count;
    rec.bytes = bytes;
    rec.chunk_index = static_cast<int32_t>(i);
    rec.chunk_count = static_cast<int32_t>(n);
    t->records.push_back(rec);
    // The real library refused the call (a bad root, reduction op, ...):
    // nothing of it is on the stream, so its gate holds nothing back (the
    // record may be finished before the engine releases the task).
    if (r != ncclSuccess && t->gated) ReleaseGate(t, sched::ReleaseReason::kRefused);
    if (absl::Status s = watcher_.Watch(lane.stream(), op.state, &TicketDoneCallback, t); !s.ok()) {
      Fail(s, "queueing a completion callback");
      TicketDone(t);
    }
    if (r != ncclSuccess) {
      result = r;
      break;
    }
  }
  const absl::Status done = dev_.RecordEvent(lane.done_event(), lane.stream());
  const absl::Status wait = done.ok() ? dev_.StreamWaitEvent(op.stream, lane.done_event()) : done;
  if (!wait.ok()) Fail(wait, "ordering the user stream after the dedicated stream");
  return result;
}

GatedLauncher::ChunkRule GatedLauncher::ChunkRuleOf(const CommState* state) const {
  const uint64_t agreed =
      state == nullptr ? CommState::kChunkBytesUnset : state->chunk_bytes.load(std::memory_order_acquire);
  if (agreed == CommState::kChunkBytesUnset) return {unagreed_chunk_bytes_, chunk_settings_.float_reductions};
  // chunk_float_reductions is stored before chunk_bytes is published.
  return {agreed, state->chunk_float_reductions.load(std::memory_order_relaxed)};
}

void GatedLauncher::PutGate(CommLane& lane, GateTicket& t) {
  if (absl::Status s = dev_.WaitGate(lane.stream(), lane.gates(), t.slot, t.value); !s.ok()) {
    // The task stays with the engine (and the watchdog); the stream just
    // does not wait for it.
    Fail(s, "putting a gate on the dedicated stream");
  }
}

void GatedLauncher::StampStart(GateTicket* t, device::StreamHandle stream) {
  // Without the stamp the tuner uses the submission time, so a failure
  // here costs only a less precise sample.
  if (stamp_p2p_start_) dev_.LaunchInlineFunc(stream, &TicketStartCallback, t).IgnoreError();
}

ncclResult_t GatedLauncher::LaunchUngatedP2P(const Op& op, const TraceRecord& base) {
  GateTicket* t = NewTicket(nullptr, op.state);
  StampStart(t, op.stream);
  const ncclResult_t r = CallReal(real_, op);
  t->records.push_back(base);
  t->records.back().result = r;
  sink_->RecordStarted();
  Submit(t, SpecFor(base, op.bytes, op.state), op.call_ns);
  if (absl::Status s = watcher_.Watch(op.stream, op.state, &TicketDoneCallback, t); !s.ok()) {
    Fail(s, "queueing a completion callback");
    TicketDone(t);
  }
  return r;
}

}  // namespace trirace::interpose
