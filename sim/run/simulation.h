// One simulated run: a Workload on a Cluster in one Mode, in simulated time.
//
//   absl::StatusOr<ModeResult> r = Simulate(cluster, workload, {.mode = Mode::kTrirace});
//
// What runs (sim/program/program.h has the program model): every rank's
// host issues its steps; its streams run their ops; matched NCCL calls
// become flows over the cluster's links (sim/nccl/collectives.h,
// sim/net/network.h). In the gated modes each rank's calls go through the
// shim's gated launch, as interpose/gate/gated_launcher.h issues them:
//   - a collective is split by the real chunk planner
//     (sched::PlanChunks with the comm's sched::CommChunkBytes, only where
//     sched::SplitKeepsEveryBit allows, as the launcher does), and each
//     chunk runs on the comm's own stream behind a gate, after the user
//     stream reached the call; the user stream waits for the last chunk;
//   - each chunk is a task submitted at call time to the rank's own real
//     sched::Engine (the policy from sched::MakePolicy, options from the
//     TRIRACE_* params, start_thread = false, on the simulation's
//     ManualClock); its gate opens when the engine releases it (at the
//     latest at the engine's hold bound); the task completes when the
//     chunk's flows do;
//   - Send/Recv and their groups run on the user stream ungated, as
//     ungated tasks (link state for the policy);
//   - the engine's occupancy reader reads the simulated NIC links' byte
//     counters, the rank's own bytes and the other local processes' urgent
//     bytes in flight (the net plugin's counters and gauges), sampled by the
//     engine itself every TRIRACE_OCCUPANCY_PERIOD_US while tasks are held;
//     the engine is stepped at every time it asks for.
// Iteration time: per iteration, the slowest rank's stamp-to-stamp time
// (as examples/hybrid_parallel reports it).
//
// Deterministic: the same cluster, workload, mode and TRIRACE_* settings
// give the same result, bit for bit.
//
// Thread safety: Simulate may run on several threads at once for different
// inputs, except that the engines read the process's params registry.
#ifndef TRIRACE_SIM_RUN_SIMULATION_H_
#define TRIRACE_SIM_RUN_SIMULATION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/cluster/cluster.h"
#include "sim/program/program.h"
#include "sim/run/mode.h"

namespace trirace::sim {

class TraceOut;  // sim/run/trace_out.h

struct SimOptions {
  Mode mode = Mode::kOff;
  // Every link unlimited and no latency: the iteration that compute and the
  // program's dependencies alone allow (the compute half of `bound`).
  bool unlimited_links = false;
  TraceOut* trace = nullptr;  // optional: a Perfetto trace of the run
  // Links reported in ModeResult::busiest.
  int busiest_links = 3;
  // Gated modes: submit each task when its stream reaches the gate (P2P:
  // when its stream starts it), and tell the engine an iteration began when
  // the rank's stream 0 (where the programs run their compute) reaches it,
  // instead of at the call as the shim does.
  // A design under study (docs/simulation.md, "The policy on the
  // simulator"), not what the shim does.
  bool decide_at_stream = false;
};

struct LinkUse {
  std::string name;
  double gbps = 0;
  double bytes_per_iteration = 0;
  double utilisation = 0;  // bytes / (rate * run time)
};

// One job's figures, for a workload of several (Workload::job_names): its
// median counts only the iterations after the warm-up that ended while
// every job still ran.
struct JobResult {
  std::string name;
  std::vector<double> iteration_ms;
  double iteration_ms_median = 0;
};

struct ModeResult {
  Mode mode = Mode::kOff;
  // Per iteration the slowest rank's (of the slowest job, with several),
  // and its median over the iterations after the warm-up.
  std::vector<double> iteration_ms;
  double iteration_ms_median = 0;
  std::vector<JobResult> jobs;  // with several jobs: each one's
  double run_ms = 0;                 // the whole run
  std::vector<LinkUse> busiest;      // by the time their bytes take at their rate, most first
  double busiest_link_ms = 0;        // the busiest link's bytes per iteration at its rate
  // Work done, for figures of the simulator's own cost.
  uint64_t events = 0;
  uint64_t flows = 0;
  uint64_t solves = 0;
  uint64_t tasks = 0;          // submitted to the engines
  uint64_t held_to_bound = 0;  // released by the engines' hold bound
  uint64_t occupancy_samples = 0;
  uint64_t tuning_changes = 0;  // links whose window or credit the engines' tuners changed
  std::string policy;           // the engines' policy (sched::Policy::name), "" ungated
  // Call-to-release times of the gates the hold bound opened (at most
  // 100000), simulated ns; with decide_at_stream, from when the stream
  // reached the gate.
  std::vector<int64_t> hold_waits_ns;
  // Gates opened, by release reason (sched::ReleaseReasonName), in reason order.
  std::vector<std::pair<std::string, uint64_t>> release_reasons;
  double wall_s = 0;
};

absl::StatusOr<ModeResult> Simulate(const Cluster& cluster, const Workload& workload, const SimOptions& options);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_RUN_SIMULATION_H_
