#include "sim/run/advise.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trirace::sim {
namespace {

// The best of the advised modes other than off: (mode, speed-up).
std::pair<Mode, double> Best(const Comparison& c) {
  std::pair<Mode, double> best = {Mode::kOff, 1.0};
  for (const ModeResult& r : c.modes) {
    if (r.mode == Mode::kOff) continue;
    const double s = c.SpeedUp(r);
    if (s > best.second) best = {r.mode, s};
  }
  return best;
}

double IdealSpeedUp(const Comparison& c) {
  const ModeResult* off = c.Find(Mode::kOff);
  return off != nullptr && c.ideal.iteration_ms_median > 0 ? off->iteration_ms_median / c.ideal.iteration_ms_median : 1;
}

// The cluster's changes the what-if rows try, each with its name.
std::vector<std::pair<std::string, ClusterOptions>> Variants(const Cluster& c, const ClusterOptions& base) {
  std::vector<std::pair<std::string, ClusterOptions>> out;
  const double gbps = c.hosts() > 0 && !c.system.hosts[0].nics.empty() ? c.system.hosts[0].nics[0].gbps : 0;
  if (gbps > 0) {
    ClusterOptions half = base, twice = base;
    half.gbps = gbps / 2;
    twice.gbps = gbps * 2;
    out.push_back({absl::StrFormat("links at half the rate (%g Gbit/s)", gbps / 2), half});
    out.push_back({absl::StrFormat("links at twice the rate (%g Gbit/s)", gbps * 2), twice});
  }
  ClusterOptions qos = base;
  qos.qos = c.qos == Qos::kNone ? Qos::kFabric : Qos::kNone;
  out.push_back({c.qos == Qos::kNone ? "fabric QoS on (every link honours the marks)" : "no network QoS", qos});
  if (c.hosts() >= 2) {
    ClusterOptions over = base;
    over.fabric = topo::Fabric::Kind::kTwoTier;
    over.oversubscription = 2;
    over.hosts_per_leaf = std::max(1, c.hosts() / 2);
    out.push_back({absl::StrFormat("2:1 oversubscription (two leaves of %d hosts)", over.hosts_per_leaf), over});
  }
  return out;
}

}  // namespace

const std::vector<Mode>& AdvisedModes() {
  static const std::vector<Mode> modes = {Mode::kOff, Mode::kWire, Mode::kGate, Mode::kTrirace};
  return modes;
}

std::string HowToTurnOn(Mode m) {
  switch (m) {
    case Mode::kWire: return "TRIRACE_MODE=observe TRIRACE_NET_CLASS_PRIORITY=on, with the TriRace net plugin";
    case Mode::kGate: return "TRIRACE_MODE=schedule TRIRACE_POLICY=trirace TRIRACE_NET_CLASS_PRIORITY=off";
    case Mode::kTrirace: return "TRIRACE_MODE=schedule TRIRACE_POLICY=trirace";
    default: return "TRIRACE_MODE=off";
  }
}

double MedianAfterWarmup(const std::vector<double>& iteration_ms, int warmup) {
  std::vector<double> v(iteration_ms.begin() + std::clamp<ptrdiff_t>(warmup, 0, ptrdiff_t(iteration_ms.size())),
                        iteration_ms.end());
  if (v.empty()) v = iteration_ms;
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

absl::StatusOr<Advice> Advise(const std::function<absl::StatusOr<Cluster>(const ClusterOptions&)>& make,
                              const ClusterOptions& options, const Workload& workload, double measured_ms,
                              const AdviseOptions& advise) {
  absl::StatusOr<Cluster> cluster = make(options);
  if (!cluster.ok()) return cluster.status();
  Advice a;
  a.measured_ms = measured_ms;
  SimOptions off;
  off.mode = Mode::kOff;
  absl::StatusOr<ModeResult> replayed = Simulate(*cluster, workload, off);
  if (!replayed.ok()) return replayed.status();
  a.replayed_ms = replayed->iteration_ms_median;
  const double miss = measured_ms > 0 ? a.replayed_ms / measured_ms - 1 : INFINITY;
  a.reproduced = std::abs(miss) <= advise.cannot_tell_above;
  if (!a.reproduced) {
    a.decision = measured_ms > 0
                     ? absl::StrFormat("cannot tell: the replay of off takes %.3f ms where the traces measured %.3f ms "
                                       "(%+.1f%%, more than %.0f%% apart), so no speed-up it predicts can be trusted; "
                                       "check the cluster (--cluster, --gbps, --hosts, --qos)",
                                       a.replayed_ms, measured_ms, 100 * miss, 100 * advise.cannot_tell_above)
                     : "cannot tell: the traces measured no iteration (no iteration marks or stamps)";
    return a;
  }
  absl::StatusOr<Comparison> c = CompareModes(*cluster, workload, AdvisedModes());
  if (!c.ok()) return c.status();
  a.comparison = *std::move(c);
  const ModeResult& off_run = *a.comparison.Find(Mode::kOff);
  a.exposed_share = std::max(0.0, 1 - a.comparison.compute_ms / off_run.iteration_ms_median);
  for (const auto& [name, changed] : Variants(*cluster, options)) {
    absl::StatusOr<Cluster> other = make(changed);
    if (!other.ok()) continue;  // a change this cluster cannot take (a spec file's fixed fabric)
    absl::StatusOr<Comparison> w = CompareModes(*other, workload, AdvisedModes());
    if (!w.ok()) return w.status();
    const auto [mode, speedup] = Best(*w);
    a.what_ifs.push_back({name, w->Find(Mode::kOff)->iteration_ms_median, mode, speedup, IdealSpeedUp(*w)});
  }
  const auto [best, speedup] = Best(a.comparison);
  const double ideal = IdealSpeedUp(a.comparison);
  const double busiest = off_run.busiest.empty() ? 0 : off_run.busiest.front().utilisation;
  if (best != Mode::kOff && speedup >= 1 + advise.min_gain) {
    a.recommended = best;
    a.decision = absl::StrFormat("turn it on: %s (%s), predicted %.3fx, %.1f%% faster (the ideal: %.3fx)",
                                 ModeName(best), HowToTurnOn(best), speedup, 100 * (1 - 1 / speedup), ideal);
  } else {
    a.decision = absl::StrFormat(
        "leave it off: no mode gains %.0f%% (the best: %s %.3fx; the ideal: %.3fx); exposed communication is %.0f%% "
        "of the iteration and the busiest link %.0f%% busy",
        100 * advise.min_gain, ModeName(best), speedup, ideal, 100 * a.exposed_share, 100 * busiest);
  }
  return a;
}

}  // namespace trirace::sim
