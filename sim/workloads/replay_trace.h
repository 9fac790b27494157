// Internal to the replay (sim/workloads/replay.h): one rank's trace as read
// from its file, and the replay that rebuilds what each op waited on from
// a trace that says when its streams ran each op.
//
// Two replays, by what the trace holds:
//   - Call times only (the shim's traces today): replay.cc's model, where
//     gaps between calls become compute on one stream.
//   - Stream times (the simulator's traces, HasStreamTiming): every op and
//     compute slice says its stream, the host step that issued it ("step")
//     and when its stream reached it ("queued_us" after the call). Then
//     BuildFromDependencies keeps each item's causes:
//       * the previous item on its stream;
//       * the host's call: a gap between two calls is a host wait, for the
//         item whose end the later call matches (within the tolerance), or
//         host time spent when nothing ended then;
//       * a wait on another stream: where a stream started an item later
//         than both its previous item's end and the call, the item of
//         another stream that ended then (within the tolerance) released
//         it. The latest such item of each other stream is waited for.
//     A gap that nothing explains becomes compute on that stream, counted.
//     Other ranks' ops are the simulator's to match, as in any workload.
//
// What a time cannot say: a dependency that did not bind in the traced run
// (its item ended before something else released the waiter) leaves no
// mark, so a mode that delays that item is replayed as if nothing waited
// for it. ReplayStats counts what was inferred.
//
// Thread safety: pure.
#ifndef TRIRACE_SIM_WORKLOADS_REPLAY_TRACE_H_
#define TRIRACE_SIM_WORKLOADS_REPLAY_TRACE_H_

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/program/program.h"
#include "sim/workloads/replay.h"

namespace trirace::sim::replay_internal {

inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

// Where the stream, host step and queue time are unknown: -1 / kNoTime.
struct StreamTiming {
  int stream = -1;
  int64_t seq = -1;
  int64_t queued_ns = kNoTime;
  bool known() const { return stream >= 0 && seq >= 0 && queued_ns != kNoTime; }
};

struct TraceOp {
  NcclFunc func = NcclFunc::kAllReduce;
  int comm_index = 0;
  uint64_t bytes = 0;
  int peer = -1;  // comm rank (Send/Recv), root (rooted calls); -1 none
  uint64_t group = 0;
  TrafficClass cls = TrafficClass::kOther;
  trirace_tag_t tag = TRIRACE_TAG_INIT;
  int64_t start_ns = 0, end_ns = 0;
  int chunk = -1, chunks = -1;
  StreamTiming timing;
  std::string where;  // "trace.0.json:12: traceEvents[10] (Send)", for errors
};

// A compute slice (the simulator's), or a stamp (an instant: start = end).
struct TraceSpan {
  int64_t start_ns = 0, end_ns = 0;
  int stamp = -1;  // stamps: the iteration boundary's index
  StreamTiming timing;
};

struct TraceComm {
  std::string id;
  int rank = 0, nranks = 0;
  std::string role;
};

struct IterationMark {
  int64_t t_ns = 0;
  int64_t iteration = 0;
  int64_t seq = -1;
};

struct RankTrace {
  std::string path;  // for errors
  std::string file;  // its name, where a rank number may be
  int rank = -1;
  std::vector<TraceOp> ops;
  std::vector<TraceSpan> computes;
  std::vector<TraceSpan> stamps;
  std::map<int, TraceComm> comms;  // by comm index
  std::vector<IterationMark> iterations;  // begin marks
  std::string producer;  // otherData "producer"
  std::string job;       // otherData "job" ("": the only job)
  int warmup = -1;       // otherData "warmup" (-1: not said)
};

// Reads one rank's trace file. Errors (InvalidArgument) name the file, the
// line of the event and what was expected.
absl::StatusOr<RankTrace> ReadTrace(const std::filesystem::path& path);

// Whether `t` has stream times for every op, compute slice and stamp, and
// at least one stamp (the iteration boundaries the replay measures).
bool HasStreamTiming(const RankTrace& t);

// Checks that `t`'s stamps are 0, 1, ... N in host order, N >= 1, stamp 0
// before every op and compute slice; sets `*last` to N. The error names the
// file and says what was expected.
absl::Status CheckStamps(const RankTrace& t, int* last);

// Writes `t`'s program into `b` (built with StreamCount(t) streams).
// `call_of` turns a trace op into the workload's call (checking its comm
// and peer). Ends and starts within `tolerance_ns` are one instant.
// Adds what it inferred to `stats`' counts. An item waits for at most
// kMaxWaitsPerItem other streams (the latest-ending first).
absl::Status BuildFromDependencies(const RankTrace& t,
                                   absl::FunctionRef<absl::StatusOr<NcclCall>(const TraceOp&)> call_of,
                                   int64_t tolerance_ns, ProgramBuilder* b, ReplayStats* stats);
int StreamCount(const RankTrace& t);
inline constexpr size_t kMaxWaitsPerItem = 8;

}  // namespace trirace::sim::replay_internal

#endif  // TRIRACE_SIM_WORKLOADS_REPLAY_TRACE_H_
