#include "sim/run/compare.h"

#include <algorithm>

#include "sim/workloads/jobs.h"

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
                                        const SimOptions& base, TraceOut* trace, std::optional<Mode> trace_mode) {
  Comparison out;
  std::vector<Mode> runs = modes;
  const bool ideal_asked = std::find(modes.begin(), modes.end(), Mode::kIdeal) != modes.end();
  if (!ideal_asked) runs.push_back(Mode::kIdeal);
  for (Mode m : runs) {
    SimOptions o = base;
    o.mode = m;
    o.trace = trace != nullptr && trace_mode == m ? trace : nullptr;
    absl::StatusOr<ModeResult> r = Simulate(cluster, workload, o);
    if (!r.ok()) return r.status();
    out.events += r->events;
    out.wall_s += r->wall_s;
    if (m == Mode::kIdeal) out.ideal = *r;
    if (m != Mode::kIdeal || ideal_asked) out.modes.push_back(*std::move(r));
  }
  // The bound: compute and dependencies with every link unlimited, and the
  // busiest link's bytes per iteration; per job when there are several.
  // (Every mode moves the same bytes: the ideal's run counts them.)
  auto bound_of = [&](const Workload& w, const ModeResult* ideal, double* compute_ms, double* link_ms) -> absl::Status {
    SimOptions unlimited = base;
    unlimited.mode = Mode::kOff;
    unlimited.trace = nullptr;
    unlimited.unlimited_links = true;
    absl::StatusOr<ModeResult> compute = Simulate(cluster, w, unlimited);
    if (!compute.ok()) return compute.status();
    out.events += compute->events;
    out.wall_s += compute->wall_s;
    *compute_ms = compute->iteration_ms_median;
    if (ideal != nullptr) {
      *link_ms = ideal->busiest_link_ms;
      return absl::OkStatus();
    }
    SimOptions o = base;
    o.mode = Mode::kIdeal;
    o.trace = nullptr;
    absl::StatusOr<ModeResult> links = Simulate(cluster, w, o);
    if (!links.ok()) return links.status();
    out.events += links->events;
    out.wall_s += links->wall_s;
    *link_ms = links->busiest_link_ms;
    return absl::OkStatus();
  };
  if (workload.job_names.size() <= 1) {
    if (absl::Status s = bound_of(workload, &out.ideal, &out.compute_ms, &out.link_ms); !s.ok()) return s;
    out.bound_ms = std::max(out.compute_ms, out.link_ms);
    return out;
  }
  for (size_t j = 0; j < workload.job_names.size(); ++j) {
    double compute = 0, link = 0;
    if (absl::Status s = bound_of(OnlyJob(workload, int(j)), nullptr, &compute, &link); !s.ok()) return s;
    out.job_bound_ms.push_back(std::max(compute, link));
    if (out.job_bound_ms.back() > out.bound_ms) {
      out.bound_ms = out.job_bound_ms.back();
      out.compute_ms = compute;
      out.link_ms = link;
    }
  }
  return out;
}

}  // namespace trirace::sim
