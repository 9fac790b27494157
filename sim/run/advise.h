// `trirace advise`: from one observed run's traces to a decision. The run
// is replayed (sim/workloads/replay.h) on the cluster it ran on; if the
// replay of `off` does not reproduce the measured iteration, no speed-up is
// given ("cannot tell"); otherwise each mode is predicted beside the ideal
// and the bound, with what-if rows (the links at half and twice their
// rate, the fabric's QoS the other way, 2:1 oversubscription), and one
// line says which mode to turn on, or why to leave it off.
//
//   absl::StatusOr<Advice> a = Advise(make_cluster, options, workload, measured_ms);
//   if (a.ok()) std::puts(a->decision.c_str());
//
// Thread safety: pure (it runs the simulator).
#ifndef TRIRACE_SIM_RUN_ADVISE_H_
#define TRIRACE_SIM_RUN_ADVISE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/cluster/cluster.h"
#include "sim/program/program.h"
#include "sim/run/compare.h"
#include "sim/run/mode.h"

namespace trirace::sim {

struct AdviseOptions {
  double cannot_tell_above = 0.10;  // |replayed off / measured - 1| above this: no speed-ups
  double min_gain = 0.02;           // a mode must predict at least this gain to be recommended
};

// One what-if: the same workload on a changed cluster.
struct WhatIf {
  std::string name;  // "links at half the rate"
  double off_ms = 0;
  Mode best = Mode::kOff;  // the best of the modes advised on
  double best_speedup = 1;
  double ideal_speedup = 1;
};

struct Advice {
  double measured_ms = 0;  // the traces' median iteration (after the warm-up)
  double replayed_ms = 0;  // the replay's `off`
  bool reproduced = false;
  // With `reproduced`:
  Comparison comparison;   // off, wire, gate, trirace; the ideal and the bound
  double exposed_share = 0;  // (off - compute and dependencies alone) / off
  std::vector<WhatIf> what_ifs;
  std::optional<Mode> recommended;
  // One line: turn it on (which mode, how, the predicted gain), leave it off
  // (why), or cannot tell (by how much the replay missed).
  std::string decision;
};

// The modes advised on, in this order.
const std::vector<Mode>& AdvisedModes();

// The variables that turn `m` on (TRIRACE_MODE=schedule TRIRACE_POLICY=...).
std::string HowToTurnOn(Mode m);

// `make` builds the cluster for a set of options (the command's flags, with
// its latency and compute settings); `options` are the run's own.
// `measured_ms`: the traces' median iteration.
absl::StatusOr<Advice> Advise(const std::function<absl::StatusOr<Cluster>(const ClusterOptions&)>& make,
                              const ClusterOptions& options, const Workload& workload, double measured_ms,
                              const AdviseOptions& advise = {});

// The median of `iteration_ms` after `warmup` iterations (all of them when
// that leaves none); 0 when empty.
double MedianAfterWarmup(const std::vector<double>& iteration_ms, int warmup);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_RUN_ADVISE_H_
