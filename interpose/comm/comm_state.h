// CommState: what the shim knows about one communicator, and the traffic
// statistics and role inference built from its ops.
//
// A CommState is created when an init/split/shrink call succeeds and lives
// until the process exits (the registry keeps retired ones for the exit
// summary and the trace's track names), so a pointer to it stays valid
// after the comm is destroyed.
//
// Comm id: a 64-bit value equal on every rank of the comm, derived from what
// all ranks pass: the unique id(s) for CommInitRank*, the parent's id, the
// parent's split count and the color for CommSplit, the parent's id, count
// and the excluded ranks for CommShrink.
//
// Role: an annotation (trirace_set_comm_role) always wins; otherwise the
// role is inferred from the traffic seen so far (InferRole).
//
// Thread safety: the identity fields are written before the state is
// published in the registry and never change. Statistics and the annotated
// role are relaxed atomics: the comm's own thread updates them while the
// trace writer or the summary reads them.
#ifndef TRIRACE_INTERPOSE_COMM_COMM_STATE_H_
#define TRIRACE_INTERPOSE_COMM_COMM_STATE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "common/traffic_class.h"
#include "interpose/op.h"
#include "nccl.h"
#include "trirace/trirace.h"

namespace trirace::interpose {

absl::string_view RoleName(int role);  // trirace_role_t -> "data-parallel", ...

// Allreduce/reducescatter buffers at least this large mark a comm as
// data-parallel when nothing else decides.
inline constexpr size_t kLargeDenseBytes = size_t{1} << 20;

struct OpStats {
  std::array<std::atomic<uint64_t>, kNumNcclFuncs> ops{};
  std::array<std::atomic<uint64_t>, kNumNcclFuncs> bytes{};
  std::array<std::atomic<uint64_t>, kNumTrafficClasses> class_ops{};
  std::array<std::atomic<uint64_t>, kNumTrafficClasses> class_bytes{};
  std::atomic<uint64_t> max_dense_bytes{0};  // largest AllReduce/ReduceScatter
  std::atomic<int64_t> in_flight_ns{0};      // sum of call -> completion
};

class CommLane;   // gated_launcher.h: the comm's dedicated stream and gates
struct CommPeers;  // op_links.h: what the comm's ranks told each other
struct WatchQueue;  // stream_watcher.h: the order in which the comm's completions are watched

struct CommState {
  ncclComm_t comm = nullptr;
  uint64_t id = 0;
  uint64_t parent_id = 0;  // 0: no parent
  int rank = -1;
  int nranks = -1;
  int device = -1;
  int index = 0;  // 1, 2, ... in creation order in this process (trace track)
  absl::string_view created_by;  // "CommInitRank", "CommSplit", ...
  bool nonblocking = false;       // created with ncclConfig_t.blocking = 0 (never gated)

  std::atomic<int> annotated_role{-1};  // trirace_role_t, -1: not annotated
  std::atomic<uint64_t> next_seq{0};    // per-comm op sequence
  std::atomic<uint64_t> children{0};    // splits/shrinks issued on this comm
  std::atomic<bool> live{true};
  std::atomic<bool> summarized{false};
  // Schedule mode: created on the comm's first gated op; reset when the comm
  // is destroyed (the watchdog frees the lane once drained).
  std::atomic<CommLane*> lane{nullptr};
  // Tracking a device: the comm's completion watcher queue, made on its
  // first watched op (StreamWatcher::Watch), dropped when the comm is
  // destroyed (StreamWatcher::Forget).
  std::atomic<WatchQueue*> watch_queue{nullptr};
  // Schedule mode: published once the peer exchange completed (op_links.h).
  std::atomic<const CommPeers*> peers{nullptr};
  // Schedule mode: the comm's chunk size agreed from the exchanged records
  // (scheduler/chunk_planner.h CommChunkBytes); kChunkBytesUnset until then.
  static constexpr uint64_t kChunkBytesUnset = ~uint64_t{0};
  std::atomic<uint64_t> chunk_bytes{kChunkBytesUnset};
  // Schedule mode: floating-point sums on this comm are split too, agreed
  // with chunk_bytes (stored before it; read only once chunk_bytes is set).
  std::atomic<bool> chunk_float_reductions{false};
  // Schedule mode: rule [R14] looked at this comm (front_stage.h).
  std::atomic<bool> host_place_noted{false};
  // Notified when the peer exchange finished (published or failed).
  absl::Notification exchanged;
  OpStats stats;
};

// The role inferred from `stats` alone: only send/recv -> pipeline;
// allgather/alltoall at least as often as allreduce/reducescatter -> expert;
// allreduce/reducescatter of a buffer >= kLargeDenseBytes -> data-parallel;
// otherwise unknown.
int InferRole(const OpStats& stats);

// The annotated role if any, else the inferred one. `annotated` tells which.
int EffectiveRole(const CommState& state, bool* annotated);

// The class an op of `func` counts as: an explicit class in the tag wins,
// then the comm's role (pipeline -> P2P, expert -> SPARSE, data-parallel ->
// DENSE), then the function (send/recv -> P2P, allgather/alltoall ->
// SPARSE, allreduce/reducescatter -> DENSE, others -> other).
TrafficClass ClassifyOp(NcclFunc func, int role, int tag_class);

// Adds one op to the statistics.
void CountOp(OpStats& stats, NcclFunc func, TrafficClass op_class, size_t bytes);

// Comm ids.
uint64_t CommIdFromUniqueIds(const ncclUniqueId* ids, int n);
uint64_t CommIdForSplit(uint64_t parent_id, uint64_t split_index, int color);
uint64_t CommIdForShrink(uint64_t parent_id, uint64_t split_index, const int* excluded, int n_excluded);
uint64_t CommIdForInitAll(int pid, uint64_t sequence);

// "0123456789abcdef".
std::string CommIdHex(uint64_t id);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMM_COMM_STATE_H_
