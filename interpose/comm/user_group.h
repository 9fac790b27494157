// UserGroup: the calling thread's NCCL group (ncclGroupStart ...
// ncclGroupEnd), tracked in one place for the shim and the launchers.
//
// NCCL launches the ops a thread issues inside a group at its outermost
// ncclGroupEnd, so everything that follows an op's work (a trace record's
// completion, a gate, a ticket) waits for that end too. One UserGroup per
// thread (ThisThreadGroup()) holds the nesting depth, the group's id, the
// ops issued inside it whose records wait for its end, in call order (each
// with its record and whether the launcher took it; the gated launcher
// takes every op of a group it gates or tracks), and the gated launcher's
// decision for the group, made at its first op.
//
// Who does what:
//   - the shim enters and leaves levels (Enter/Leave), stamps each op with
//     id(), adds each op after the launcher returned (Add), and at the
//     outermost end completes the records the launcher did not take, then
//     Reset()s;
//   - a launcher reads the group through Op::group (issue time) and in
//     Launcher::GroupEnd (the group's ops, once the outermost level closed).
//
// Thread safety: thread-confined: only the owning thread touches its group.
#ifndef TRIRACE_INTERPOSE_COMM_USER_GROUP_H_
#define TRIRACE_INTERPOSE_COMM_USER_GROUP_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "interpose/trace/trace_record.h"
#include "nccl.h"

namespace trirace::interpose {

class CommLane;
struct CommState;

// One op issued inside the group.
struct GroupOp {
  TraceRecord record;  // as the shim prepared it, with the call's result
  CommState* state = nullptr;
  cudaStream_t stream = nullptr;  // the caller's stream
  bool taken = false;             // the launcher finishes the record
};

// How the gated launcher runs a group, decided by its first op.
enum class GroupGating {
  kUndecided,    // no op yet
  kPassthrough,  // as in observe mode
  kGated,        // on the comm's lane, behind one gate
  kP2P,          // on the callers' streams, ungated, one scheduler task
};

class UserGroup {
 public:
  // ncclGroupStart succeeded: one level deeper. The outermost level opens
  // a new group with id `id` (non-zero, unique in the process).
  void Enter(uint64_t id);
  // ncclGroupEnd (or GroupSimulateEnd): one level up. True when that closed
  // the outermost level (the group's ops are then to be finished). An end
  // without a start is a no-op that returns false.
  bool Leave();
  // The current level; 0 outside any group.
  int depth() const { return depth_; }
  // The open group's id; 0 outside any group.
  uint64_t id() const { return depth_ > 0 ? id_ : 0; }

  void Add(GroupOp op) { ops_.push_back(std::move(op)); }
  std::vector<GroupOp>& ops() { return ops_; }
  const std::vector<GroupOp>& ops() const { return ops_; }

  // Comms created inside the group: usable once its outermost end succeeded.
  void AddCreatedComm(CommState* state) { created_.push_back(state); }
  const std::vector<CommState*>& created_comms() const { return created_; }

  // Where a creating call inside the group will find its comm written at
  // the group's end (a split: NCCL writes *newcomm then; comm_ledger.h).
  void AddPendingComm(ncclComm_t* slot) { pending_comms_.push_back(slot); }
  const std::vector<ncclComm_t*>& pending_comms() const { return pending_comms_; }

  // Forgets the closed group: its ops, created comms, pending comm slots
  // and the launcher's decision.
  void Reset();

  // The gated launcher's decision and, for kGated, the lane it runs on.
  GroupGating gating = GroupGating::kUndecided;
  CommLane* lane = nullptr;

 private:
  int depth_ = 0;
  uint64_t id_ = 0;
  std::vector<GroupOp> ops_;
  std::vector<CommState*> created_;
  std::vector<ncclComm_t*> pending_comms_;
};

// The calling thread's group.
UserGroup& ThisThreadGroup();

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMM_USER_GROUP_H_
