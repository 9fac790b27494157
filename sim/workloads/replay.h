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
// Thread safety: pure.
#ifndef TRIRACE_SIM_WORKLOADS_REPLAY_H_
#define TRIRACE_SIM_WORKLOADS_REPLAY_H_

#include <string>

#include "absl/status/statusor.h"
#include "sim/program/program.h"

namespace trirace::sim {

// Errors name the folder or file and what is missing or wrong.
absl::StatusOr<Workload> ReplayWorkload(const std::string& dir);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_WORKLOADS_REPLAY_H_
