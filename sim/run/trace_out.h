// A Perfetto / Chrome trace of a simulated run, in the shim's trace format
// (interpose/trace/trace_json.h): op slices with cat "op" and the same args
// (func, bytes, class, gate_wait_us, run_us, release, chunk ...), iteration
// marks as process-wide instants, one process per rank (pid = rank), one
// track per comm and one for compute. ui.perfetto.dev and bench/e2e's
// scripts read it as they read the shim's; times are simulated
// microseconds from 0.
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

#include "absl/status/status.h"
#include "sim/program/program.h"

namespace trirace::sim {

class TraceOut {
 public:
  // Called by the simulator.
  // `call` null: compute.
  void Slice(int rank, const StreamOp& op, const NcclCall* call, TrafficClass cls, int64_t start_ns, int64_t end_ns);
  void Gate(int rank, const NcclCall& call, TrafficClass cls, int64_t call_ns, int64_t open_ns, int64_t end_ns,
            std::string_view release, uint32_t chunk, uint32_t chunks);
  void Instant(int rank, const char* what, int64_t t_ns, int64_t iteration);

  // Writes the trace; the workload names the ranks' comm tracks. A path
  // with "%r" gets a file per rank, %r replaced by the rank.
  absl::Status Write(const std::string& path, const Workload& workload) const;
  size_t events() const { return events_; }

 private:
  std::string& Begin(int rank);
  std::map<int, std::string> bodies_;  // by rank
  size_t events_ = 0;
};

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_RUN_TRACE_OUT_H_
