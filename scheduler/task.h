// The scheduler's task model: one gated unit of communication.
//
// A task is what the launcher hands the engine for every NCCL operation (or
// every chunk of one) it launched behind a gate: which communicator it is
// on, which traffic class it belongs to, how many bytes it moves, which links
// it crosses and the annotation tag it carried. The engine stamps it with an
// id and an enqueue time; a policy decides when its gate opens.
//
// This header is pure C++: no CUDA, no NCCL. The simulator and the shim use
// the same types.
//
// Thread safety: plain value types; no internal synchronisation.
#ifndef TRIRACE_SCHEDULER_TASK_H_
#define TRIRACE_SCHEDULER_TASK_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "common/traffic_class.h"
#include "trirace/trirace.h"

namespace trirace::sched {

using TaskId = uint64_t;
// Dense index into the engine's link table (0, 1, 2, ... in AddLink order).
using LinkId = uint32_t;
// A communicator id equal on all ranks of the comm (the shim's registry id).
using CommId = uint64_t;

inline constexpr int64_t kNeverNs = std::numeric_limits<int64_t>::max();
// An unset field of a task's tag (TRIRACE_UNSET).
inline constexpr int32_t kUnsetTag = TRIRACE_UNSET;

// What the launcher submits.
struct TaskSpec {
  CommId comm = 0;
  TrafficClass traffic_class = TrafficClass::kOther;
  uint64_t bytes = 0;              // bytes this task puts on its links
  std::vector<LinkId> links{};     // links crossed; empty = none modelled
  // The annotation tag of the call that produced the task: the C API's own
  // type (include/trirace/trirace.h), fields TRIRACE_UNSET when unknown.
  trirace_tag_t tag = TRIRACE_TAG_INIT;
  // Absolute time (engine clock) by which the task should be running; a
  // hint from the caller. Policies may also derive one from the tag.
  std::optional<int64_t> deadline_ns{};
  // Chunk `chunk_index` of `chunk_count` of one NCCL call (0 of 1 if whole).
  uint32_t chunk_index = 0;
  uint32_t chunk_count = 1;
  // Opaque value handed back with the release (the launcher's gate slot).
  uint64_t cookie = 0;
  // false: the task only sends (an ncclSend, or a group of sends). A send
  // may complete once its bytes are handed to the transport's buffers, so
  // its duration says little about the link; the tuner times the others.
  bool receives = true;
  // false: the launcher did not put a gate in front of it (P2P launched
  // straight on the user stream). The engine counts it as running from
  // submission, for link state, and never releases it.
  bool gated = true;
};

// Why a gate was opened. Recorded in the trace next to each op.
enum class ReleaseReason : uint8_t {
  kUngated,       // never gated (tracked for link state only)
  kFifo,          // fifo: everything at once
  kPriority,      // priority: within the global credit window, in layer order
  kP2P,           // trirace: P2P is never held
  kOtherClass,    // trirace: unclassified traffic is not held
  kSparse,        // trirace: SPARSE goes ahead of DENSE
  kDenseGap,      // trirace: the links were free of higher classes
  kDenseCredit,   // trirace: within the small credit beside higher classes
  kDeadline,      // trirace: the task's deadline was near
  kMaxHold,       // held for TRIRACE_MAX_HOLD_US (policy rule or engine bound)
  kRandom,        // the adversarial test policy
  kShutdown,      // the engine was stopped with the task still held
  kRefused,       // the real call failed: nothing of it is on the stream to hold
};
std::string_view ReleaseReasonName(ReleaseReason r);

enum class TaskState : uint8_t { kPending, kRunning };

// A task owned by the engine. Policies see it read-only.
struct Task {
  TaskId id = 0;
  TaskSpec spec;
  int64_t enqueue_ns = 0;
  int64_t release_ns = -1;  // set when released
  // Position in the engine's submission order (ids may be reserved out of
  // order), and in the comm's (0, 1, ...).
  uint64_t submit_seq = 0;
  uint64_t comm_seq = 0;
  TaskState state = TaskState::kPending;
  // Set by the engine: this is the oldest held task of its communicator
  // (the next one the comm's stream will reach).
  bool comm_head = false;
  ReleaseReason reason = ReleaseReason::kUngated;

  TrafficClass traffic_class() const { return spec.traffic_class; }
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_TASK_H_
