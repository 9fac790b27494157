// A Perfetto / Chrome trace of a simulated run, in the shim's trace format
// (interpose/trace/trace_json.h): op slices with cat "op" and the same args
// (func, bytes, class, peer, group, gate_wait_us, run_us, release, chunk
// ...), iteration marks as process-wide instants, one process per rank
// (pid = rank), one track per comm and one for compute, and per-rank files'
// otherData describing each comm as the shim does ("comm <index>": id,
// rank r/n, role). ui.perfetto.dev and bench/e2e's scripts read it as they
// read the shim's; times are simulated microseconds from 0.
//
// What the shim's traces lack, so that `trirace sim --replay` can rebuild
// what each op waited on (sim/workloads/replay.h):
//   - an op or compute slice spans the time its stream ran it (the shim's
//     op slice starts at the call); args "queued_us" is how long it sat on
//     its stream before (the call was at ts - queued_us), "stream" the
//     rank's stream, "step" the host's step that issued it (host order);
//   - every call of a group is its own slice, with the group's "group" id;
//   - "stamp N" instants (cat "iteration") where a stream reached the
//     point iteration N starts (the simulator's iteration boundaries);
//   - otherData "warmup" and "job".
//
//   TraceOut trace;
//   Simulate(cluster, workload, {.mode = m, .trace = &trace});
//   trace.Write("sim.json", workload);          // one file, every rank
//   trace.Write("dir/trace.%r.json", workload);  // a file per rank, as TRIRACE_TRACE's %r
//
// Thread safety: one run at a time.
#ifndef TRIRACE_SIM_RUN_TRACE_OUT_H_
#define TRIRACE_SIM_RUN_TRACE_OUT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "sim/program/program.h"

namespace trirace::sim {

class TraceOut {
 public:
  // Called by the simulator.
  // The host issued op `op` (an index in the rank's ops) at `t_ns`, as its
  // `step`-th host step.
  void Called(int rank, int op, int64_t t_ns, int64_t step);
  // `calls` null: compute; else op.call_count calls.
  void Slice(int rank, int op_index, const StreamOp& op, const NcclCall* calls,
             absl::FunctionRef<TrafficClass(const NcclCall&)> class_of, int64_t start_ns, int64_t end_ns);
  void Gate(int rank, const NcclCall& call, TrafficClass cls, int64_t call_ns, int64_t open_ns, int64_t end_ns,
            std::string_view release, uint32_t chunk, uint32_t chunks);
  // "begin" or "end" of `iteration`, issued as host step `step`.
  void Instant(int rank, const char* what, int64_t t_ns, int64_t iteration, int64_t step);
  // A stream reached kStamp op `op_index`.
  void Stamp(int rank, int op_index, const StreamOp& op, int64_t t_ns);

  // Writes the trace; the workload names the ranks' comm tracks. A path
  // with "%r" gets a file per rank, %r replaced by the rank.
  absl::Status Write(const std::string& path, const Workload& workload) const;
  size_t events() const { return events_; }

 private:
  std::string& Begin(int rank);
  // ", \"stream\":..,\"seq\":..,\"queued_us\":.." for op `op_index` started at `start_ns`.
  std::string Issued(int rank, int op_index, int stream, int64_t start_ns) const;
  std::map<int, std::string> bodies_;  // by rank
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> called_;  // by rank, by op: (time, host step)
  size_t events_ = 0;
};

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_RUN_TRACE_OUT_H_
