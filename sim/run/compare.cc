#include "sim/run/compare.h"

#include <algorithm>

namespace trirace::sim {

const ModeResult* Comparison::Find(Mode m) const {
  for (const ModeResult& r : modes) {
    if (r.mode == m) return &r;
  }
  return m == Mode::kIdeal ? &ideal : nullptr;
}

double Comparison::SpeedUp(const ModeResult& r) const {
  const ModeResult* off = Find(Mode::kOff);
  if (off == nullptr || r.iteration_ms_median <= 0) return 0;
  return off->iteration_ms_median / r.iteration_ms_median;
}

std::optional<double> Comparison::GainShare(const ModeResult& r) const {
  const ModeResult* off = Find(Mode::kOff);
  if (off == nullptr) return std::nullopt;
  const double possible = off->iteration_ms_median - ideal.iteration_ms_median;
  if (possible <= 1e-9 * off->iteration_ms_median) return std::nullopt;
  return (off->iteration_ms_median - r.iteration_ms_median) / possible;
}

absl::StatusOr<Comparison> CompareModes(const Cluster& cluster, const Workload& workload, const std::vector<Mode>& modes,
                                        TraceOut* trace, std::optional<Mode> trace_mode) {
  Comparison out;
  for (Mode m : modes) {
    SimOptions o;
    o.mode = m;
    if (trace != nullptr && trace_mode == m) o.trace = trace;
    absl::StatusOr<ModeResult> r = Simulate(cluster, workload, o);
    if (!r.ok()) return r.status();
    if (m == Mode::kIdeal) out.ideal = *r;
    out.modes.push_back(*std::move(r));
  }
  if (out.Find(Mode::kIdeal) == &out.ideal && out.ideal.iteration_ms.empty()) {
    SimOptions o;
    o.mode = Mode::kIdeal;
    absl::StatusOr<ModeResult> r = Simulate(cluster, workload, o);
    if (!r.ok()) return r.status();
    out.ideal = *std::move(r);
  }
  SimOptions unlimited;
  unlimited.mode = Mode::kOff;
  unlimited.unlimited_links = true;
  absl::StatusOr<ModeResult> compute = Simulate(cluster, workload, unlimited);
  if (!compute.ok()) return compute.status();
  out.compute_ms = compute->iteration_ms_median;
  out.link_ms = out.ideal.busiest_link_ms;
  out.bound_ms = std::max(out.compute_ms, out.link_ms);
  return out;
}

}  // namespace trirace::sim
