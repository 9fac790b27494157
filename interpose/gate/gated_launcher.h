// GatedLauncher: the launcher of TRIRACE_MODE=schedule (docs/design.md,
// "Execution model: gated launch"; docs/shim.md, "Schedule mode").
//
// The host launch order never changes: every op is issued to the real NCCL
// in the calling thread, at call time, in the application's order. What the
// scheduler decides is when the comm's dedicated stream D may start it. Per
// collective (not in a user group), under the comm's CommLane lock:
//
//   record E_in on the user stream U;  D waits E_in
//   per chunk i (AllReduce/Reduce/Broadcast above TRIRACE_CHUNK_BYTES,
//   split by sched::PlanChunks; else one ticket):
//     D: wait gate i;  real call (chunk i) on D;  watch D: completion i
//     register task i with the engine (ReserveId + Submit; cookie = ticket)
//   record E_done on D;  U waits E_done;  return the real result
//
// Send/Recv run on U as called, without a gate; their completion is
// watched on U (ungated tasks: link state for the policy).
//
// Completions are never host functions on D or U: the StreamWatcher
// (stream_watcher.h) records an event there and runs the callback on a
// stream of its own, so neither stream waits for a host thread.
//
// A user group (ncclGroupStart/End) is issued as one ticket. The real
// GroupStart and every op go to the real NCCL at call time (so each call
// returns its real result); the first op decides the group's kind
// (UserGroup::gating, kept in the thread's group, user_group.h):
//   - collective first: every op of the group is issued on that comm's D
//     (NCCL queues grouped ops until GroupEnd, so the stream work is still
//     ahead). At the outermost GroupEnd: E_in of every user stream involved
//     -> D, one gate, the real GroupEnd (its result is returned), D
//     watched for the completion, E_done -> every user stream, one task.
//   - Send/Recv first: ops stay on their streams; one ungated task whose
//     completion is watched on each stream involved.
// Ops of the group on a comm that cannot be gated, or on another device,
// keep their own stream (they join the group's completion).
//
// Passthrough (the op runs as in observe mode): the comm is unknown or
// nonblocking (v1 limitation), its role is in TRIRACE_EXCLUDE_ROLES, the
// user stream is being captured (or capture cannot be queried), or an
// earlier step of the gated path failed (one WARN, then passthrough for the
// process). Create() fails, and the shim observes, when
// CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue: a closed gate would
// stall every stream); the shim does not call it when no device backend
// opens.
//
// Links: each task carries the links its op crosses (op_links.h), known
// once the comm's ranks have exchanged their identities (peer_exchange.h,
// run by CommsReady when the comm is created); until then this rank's NIC.
//
// Gates open when the engine releases the task (GateOpener::OpenGate) or,
// at the latest, by the hold bound: the engine applies it itself, and the
// GateWatchdog opens any gate the engine has not opened by then.
//
// Trace: a taken record per ticket (chunk, or op of a group) ends at the
// ticket's completion callback and carries gate_wait_ns (call -> release),
// run_ns (release -> completion), release_reason (sched::ReleaseReason) and
// chunk_index/chunk_count.
//
// Files: gated_launcher.cc (creation, dispatch, ticket hand-offs),
// gated_launch_chunked.cc, gated_launch_group.cc; gate_ticket.h (the
// ticket), comm_lane.h (per-comm stream and gates), gate_watchdog.h,
// stream_watcher.h (completion callbacks).
//
// Thread safety: Launch/Group* from any application threads (the group is
// the calling thread's own; per-comm state in CommLane); OpenGate from
// engine threads; completion callbacks from the watcher's stream threads.
#ifndef TRIRACE_INTERPOSE_GATE_GATED_LAUNCHER_H_
#define TRIRACE_INTERPOSE_GATE_GATED_LAUNCHER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "interpose/device/device.h"
#include "interpose/gate/comm_lane.h"
#include "interpose/gate/gate_ticket.h"
#include "interpose/gate/gate_watchdog.h"
#include "interpose/gate/launcher.h"
#include "interpose/network/op_links.h"
#include "interpose/network/peer_exchange.h"
#include "interpose/stream_watcher.h"
#include "scheduler/engine.h"

namespace trirace::interpose {

// Bit i set: role i (trirace_role_t) is excluded. Parses TRIRACE_EXCLUDE_ROLES
// text ("pipeline,expert"); unknown names are reported in `bad`.
uint32_t ParseExcludedRoles(absl::string_view text, std::string* bad);

// The completion callback the watcher runs once a ticket's stream has run
// its work (a C function for the device's host-function call):
// GatedLauncher::TicketDone.
void TicketDoneCallback(void* ticket);
// Stamps GateTicket::started_ns (an inline function queued before the op; with
// several streams the last to get there sets it).
void TicketStartCallback(void* ticket);

class GatedLauncher final : public Launcher, public sched::GateOpener {
 public:
  struct Stats {
    uint64_t gated_tickets = 0;    // tickets behind a gate
    uint64_t ungated_tickets = 0;  // P2P / P2P groups / gate ring full
    uint64_t passthrough = 0;    // ops issued as in observe mode
    uint64_t watchdog_opens = 0;
    uint64_t lanes = 0;           // comms' lanes in use, retiring ones included
    uint64_t lanes_retiring = 0;  // of destroyed comms, waiting for their work to drain
    uint64_t lanes_freed = 0;
    sched::EngineStats engine;
  };

  // A launcher issuing through `real` on `dev` (the shim's device backend,
  // device::SelectDevice), watching completions with `watcher` (made on
  // `dev`); both must outlive the launcher. The engine is
  // built from the params (TRIRACE_POLICY, TRIRACE_MAX_HOLD_US, ...). The
  // error says why schedule mode cannot run (the shim then observes).
  static absl::StatusOr<std::unique_ptr<GatedLauncher>> Create(const RealNccl& real, RecordSink* sink,
                                                               device::Device& dev, StreamWatcher& watcher);
  ~GatedLauncher() override;

  ncclResult_t Launch(const Op& op, OpRecording* recording) override;
  ncclResult_t GroupStart() override;
  ncclResult_t GroupEnd(UserGroup& group) override;
  ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info, UserGroup& group) override;
  bool gated() const override { return true; }
  // The occupancy input in words, for the start-up verdict (start_verdict.h).
  const std::string& occupancy_input() const { return occupancy_input_; }
  absl::string_view name() const override { return "gated"; }
  void BeginIteration(int64_t iteration) override;
  // Runs the peer exchange (peer_exchange.h) on each blocking comm of more
  // than one rank, in one real group when there are several, and waits for
  // it: the comm's chunk size comes from the exchanged records, so it must
  // be known before the application's first operation on the comm.
  void CommsReady(std::span<CommState* const> states) override;
  // Retires the comm's lane: the watchdog frees it (its stream, events and
  // gate ring) once idle (gate_watchdog.h). Nothing is freed after the
  // gated path failed (a gate wait may be left without its ticket then).
  void CommRemoved(CommState* state) override;
  void Shutdown() override;

  // sched::GateOpener
  void OpenGate(const sched::ReleasedTask& task) override;

  Stats stats() const;
  absl::string_view device_name() const { return dev_.name(); }
  std::string_view policy_name() const { return engine_->policy_name(); }

  // Completion callback target (stream threads); public for the C callback.
  void TicketDone(GateTicket* ticket);
  sched::Engine& engine() { return *engine_; }

 private:
  // The taken records of a closed user group (gated_launch_group.cc).
  struct TakenGroup;

  GatedLauncher(const RealNccl& real, RecordSink* sink, device::Device& dev, StreamWatcher& watcher);

  // Whether `op` may be gated; false: passthrough.
  bool CanGate(const Op& op);
  // The comm's lane, created on first use; nullptr after a failure (which
  // disables gating).
  CommLane* LaneFor(CommState* state);
  // An op outside a user group (gated_launch_chunked.cc).
  ncclResult_t LaunchGated(const Op& op, CommLane& lane, const TraceRecord& base)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane.mu);
  ncclResult_t LaunchUngatedP2P(const Op& op, const TraceRecord& base);
  // An op inside a user group, and the group's end (gated_launch_group.cc).
  ncclResult_t LaunchInGroup(const Op& op, OpRecording* recording);
  ncclResult_t EndGatedGroup(TakenGroup& g, CommLane& lane);
  // `t`: the group's ticket, made (and stamped) before the real GroupEnd.
  void EndUngatedGroup(TakenGroup& g, GateTicket* t);
  // Queues TicketStartCallback(t) inline on `stream` when stamp_p2p_start_.
  void StampStart(GateTicket* t, device::StreamHandle stream);

  GateTicket* NewTicket(CommLane* lane, CommState* state);
  // An idle retired lane (the watchdog's thread): its gate ring is kept for
  // the next lane of its device, the rest destroyed.
  void FreeLane(std::unique_ptr<CommLane> lane) ABSL_LOCKS_EXCLUDED(lanes_mu_);
  // The task of `base` (an op of comm `state`); `links` as OpLinks::For
  // gives them for it unless given.
  sched::TaskSpec SpecFor(const TraceRecord& base, uint64_t bytes, const CommState* state) const;
  // The exchange's completion (a driver thread).
  void PeersKnown(CommState& state, absl::StatusOr<std::vector<topo::PeerIdentity>> ranks);
  // This rank's record for comm `s`: its place (OpLinks) and whether it
  // marks classes on the wire.
  topo::PeerIdentity LocalIdentity(const CommState& s);
  // Rule [R14] (front_stage.h): on a P2P op of a pipeline comm whose peers
  // are known (annotated, or inferred and spanning hosts), notes once per
  // comm where this rank stands on its uplink.
  void NoteHostPlace(CommState& state);
  // Registers the ticket's task; a gated one not released at once is
  // watched. True when no gate is needed on the stream (ungated, or the
  // policy released it inside Submit).
  bool Submit(GateTicket* t, sched::TaskSpec spec, int64_t call_ns);
  // Puts t's gate wait on the lane's stream (lane.mu held).
  void PutGate(CommLane& lane, GateTicket& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane.mu);
  // Fails the gated path for the process (one WARN).
  void Fail(const absl::Status& status, absl::string_view step);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  const RealNccl& real_;
  RecordSink* const sink_;
  device::Device& dev_;  // the shim's
  StreamWatcher& watcher_;  // the shim's
  std::unique_ptr<OpLinks> links_;
  std::string occupancy_input_;
  std::unique_ptr<sched::Engine> engine_;
  std::unique_ptr<PeerExchange> exchange_;  // nullptr: TRIRACE_PEER_EXCHANGE=0
  std::unique_ptr<GateWatchdog> watchdog_;
  // This process's TRIRACE_CHUNK_* settings: they go into its identity
  // record, and they plan the comms that have no agreed ones.
  topo::ChunkSettings chunk_settings_{};
  // Stamp when the stream reaches each ungated P2P op, for the tuner: where
  // the device runs inline functions (host streams: a function call, no
  // device time); a CUDA host function would stall the GPU stream until
  // the host ran it.
  bool stamp_p2p_start_ = false;
  uint64_t unagreed_chunk_bytes_ = 0;  // for comms without exchanged records
  // How ops on `state` are split: agreed from the records where the comm
  // was exchanged (chunk_agreement.h), else from this process's settings.
  struct ChunkRule {
    uint64_t bytes = 0;
    bool float_reductions = false;
  };
  ChunkRule ChunkRuleOf(const CommState* state) const;
  uint32_t excluded_roles_ = 0;
  bool front_stage_first_ = false;  // FrontStageFirstEnabled()
  std::atomic<bool> failed_{false};
  std::atomic<bool> shut_down_{false};

  mutable absl::Mutex lanes_mu_;  // lane creation and retirement
  std::vector<std::unique_ptr<CommLane>> lanes_ ABSL_GUARDED_BY(lanes_mu_);  // retired ones: the watchdog's
  // Gate rings of freed lanes, by device ordinal, for the next lanes.
  std::vector<std::pair<int, std::unique_ptr<device::GateBlock>>> spare_gates_ ABSL_GUARDED_BY(lanes_mu_);

  std::atomic<uint64_t> gated_tickets_{0};
  std::atomic<uint64_t> ungated_tickets_{0};
  std::atomic<uint64_t> passthrough_{0};
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_GATED_LAUNCHER_H_
