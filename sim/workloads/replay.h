// A workload replayed from the shim's own traces (TRIRACE_TRACE, one file
// per rank: interpose/trace/trace_json.h's format), for `trirace sim --replay`.
//
// From every *.json file of the folder: the rank (the process name's
// "rank N", else the number in the file name), the comms (otherData's
// "comm <index>": id, rank r/n, role; a comm's members are matched across
// files by id), and the op slices (cat "op") in call order, a schedule
// mode's chunks of one call merged back into the call, a user group's ops
// issued as one group.
//
// How time between ops becomes work: each rank has a compute stream and a
// stream per comm. Before an op, the compute stream waits for every op that
// the trace shows finished before this op was called (the application
// probably waited for it; a timestamp cannot say more), then computes for
// the gap since the later of the previous call and those finishes; the op
// then runs on its comm's stream once the compute stream got there. So a
// slower network delays what waited on it in the trace, and overlap that
// the trace shows is kept. Iteration marks (trirace_iteration_begin) start
// iterations; without them the whole trace is one.
//
// The simulator's own traces (`trirace sim --trace DIR/trace.%r.json`) say
// more: when each op's stream ran it, on which stream, in which host step,
// and where its iterations start. Those replay by dependencies instead:
// each op and compute slice after what its times say released it
// (sim/workloads/replay_trace.h), so the replay reproduces the traced run.
// otherData's "warmup" and "job" keep the run's warm-up and its jobs.
//
// Thread safety: pure.
#ifndef TRIRACE_SIM_WORKLOADS_REPLAY_H_
#define TRIRACE_SIM_WORKLOADS_REPLAY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/program/program.h"

namespace trirace::sim {

// How a replay was built. By dependencies when every trace has stream
// times (the simulator's; sim/workloads/replay_trace.h): then the counts of
// what the times said each item waited for.
struct ReplayStats {
  bool by_dependencies = false;
  int64_t items = 0;         // ops (a group as one), compute slices, stamps
  int64_t stream_waits = 0;  // waits on another stream's item
  int64_t host_waits = 0;    // host waits on an item's end
  int64_t host_spent = 0;    // host gaps that no end explains
  int64_t unexplained = 0;   // stream gaps that no end explains (compute)
  // What the traces measured: per iteration the slowest rank's time, in
  // ms, between its stamps (by dependencies) or its iteration marks
  // (by call times; the last iteration has no end mark and is left out).
  std::vector<double> measured_iteration_ms;
};

// Errors name the folder or file and what is missing or wrong.
absl::StatusOr<Workload> ReplayWorkload(const std::string& dir, ReplayStats* stats = nullptr);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_WORKLOADS_REPLAY_H_
