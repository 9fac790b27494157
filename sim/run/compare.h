// Every requested mode of one workload on one cluster, next to the ideal
// and the bound (mode.h defines them), and the figures the tables print:
// speed-up against `off` and the share of the possible gain (off -> ideal).
//
//   absl::StatusOr<Comparison> c = CompareModes(cluster, workload, {Mode::kOff, Mode::kTrirace});
//
// Thread safety: as Simulate.
#ifndef TRIRACE_SIM_RUN_COMPARE_H_
#define TRIRACE_SIM_RUN_COMPARE_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/run/simulation.h"

namespace trirace::sim {

struct Comparison {
  std::vector<ModeResult> modes;  // in the order asked
  ModeResult ideal;
  double compute_ms = 0;  // the iteration with every link unlimited
  double link_ms = 0;     // the busiest link's bytes per iteration at its rate
  double bound_ms = 0;    // max(compute_ms, link_ms)
  // With several jobs the figures above are the slowest job's bound, and
  // each job's bound is its own (alone on the cluster: the other jobs'
  // traffic left out, as bench/e2e bounds the rails presets).
  std::vector<double> job_bound_ms;
  // The simulator's own work over every run above (modes, ideal, bound).
  uint64_t events = 0;
  double wall_s = 0;

  const ModeResult* Find(Mode m) const;
  // off / mode; 0 without `off`.
  double SpeedUp(const ModeResult& r) const;
  // (off - mode) / (off - ideal); nullopt without `off` or when off is at the ideal.
  std::optional<double> GainShare(const ModeResult& r) const;
};

// Runs `modes` (and the ideal and the bound's compute half, per job when
// there are several) with `base`'s options (its mode and trace are
// ignored); `trace`, if set, records the run of `trace_mode`.
absl::StatusOr<Comparison> CompareModes(const Cluster& cluster, const Workload& workload, const std::vector<Mode>& modes,
                                        const SimOptions& base = {}, TraceOut* trace = nullptr,
                                        std::optional<Mode> trace_mode = std::nullopt);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_RUN_COMPARE_H_
