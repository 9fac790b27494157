#include "sim_report.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "sim/workloads/collective.h"

namespace trirace::tools {
namespace {

using ojson = nlohmann::ordered_json;

// Figures rounded for print, so the JSON is the same on every machine.
double Round(double v, double unit) { return std::round(v / unit) * unit; }

ojson ModeJson(const sim::Comparison& c, const sim::ModeResult& r, bool timing) {
  ojson m;
  m["iteration_ms"] = Round(r.iteration_ms_median, 1e-6);
  m["speedup"] = Round(c.SpeedUp(r), 1e-6);
  const std::optional<double> share = c.GainShare(r);
  m["gain_share"] = share ? ojson(Round(*share, 1e-6)) : ojson(nullptr);
  ojson its = ojson::array();
  for (double v : r.iteration_ms) its.push_back(Round(v, 1e-6));
  m["iterations_ms"] = its;
  if (!r.jobs.empty()) {
    ojson jobs = ojson::object();
    ojson jobs_its = ojson::object();
    for (const sim::JobResult& job : r.jobs) {
      jobs[job.name] = Round(job.iteration_ms_median, 1e-6);
      ojson its_j = ojson::array();
      for (double v : job.iteration_ms) its_j.push_back(Round(v, 1e-6));
      jobs_its[job.name] = its_j;
    }
    m["jobs_ms"] = jobs;
    m["jobs_iterations_ms"] = jobs_its;
  }
  ojson links = ojson::array();
  for (const sim::LinkUse& u : r.busiest) {
    links.push_back({{"link", u.name}, {"gbps", u.gbps}, {"utilisation", Round(u.utilisation, 1e-6)}});
  }
  m["busiest_links"] = links;
  m["engine_tasks"] = r.tasks;
  m["held_to_bound"] = r.held_to_bound;
  m["tuning_changes"] = r.tuning_changes;
  ojson releases = ojson::object();
  for (const auto& [reason, n] : r.release_reasons) releases[reason] = n;
  m["releases"] = releases;
  if (timing) {
    m["events"] = r.events;
    m["flows"] = r.flows;
    m["wall_s"] = r.wall_s;
  }
  return m;
}

}  // namespace

std::string ClusterLine(const sim::Cluster& c) {
  const topo::Host& h = c.system.hosts[0];
  std::string nics = h.nics.empty() ? "no NIC" : absl::StrFormat("%zu x %g Gbit/s", h.nics.size(), h.nics[0].gbps);
  return absl::StrFormat("%s: %d hosts x %d ranks, %s, %s fabric, %s, class queues: %s", c.name, c.hosts(),
                         c.ranks_per_host, nics, topo::FabricKindName(c.system.fabric.kind),
                         c.transport == sim::Transport::kSocket ? "sockets" : "RDMA", sim::QosName(c.qos));
}

std::string BusiestLinksText(const sim::ModeResult& r) {
  std::string links;
  for (const sim::LinkUse& u : r.busiest) {
    absl::StrAppendFormat(&links, "%s%s %.0f%%", links.empty() ? "" : ", ", u.name, 100 * u.utilisation);
  }
  return links;
}

std::string ReplayLine(const char* command, const sim::ReplayStats& s) {
  if (!s.by_dependencies) {
    return absl::StrCat(command, ": replay by call times (the traces say no stream times; gaps between calls become "
                                 "compute)\n");
  }
  return absl::StrFormat("%s: replay by dependencies: %d items, %d waits on another stream, %d host waits, "
                         "%d host gaps spent, %d stream gaps unexplained (computed)\n",
                         command, s.items, s.stream_waits, s.host_waits, s.host_spent, s.unexplained);
}

std::string SimWorkloadReport(const sim::Cluster& cluster, const sim::Workload& w, const sim::Comparison& c,
                              const SimReportOptions& o) {
  if (o.json) {
    ojson j;
    j["workload"] = w.name;
    j["cluster"] = ClusterLine(cluster);
    j["qos"] = std::string(sim::QosName(cluster.qos));
    j["ranks"] = w.ranks.size();
    ojson modes = ojson::object();
    for (const sim::ModeResult& r : c.modes) modes[std::string(sim::ModeName(r.mode))] = ModeJson(c, r, o.timing);
    j["modes"] = modes;
    j["ideal_ms"] = Round(c.ideal.iteration_ms_median, 1e-6);
    j["bound_ms"] = Round(c.bound_ms, 1e-6);
    j["compute_ms"] = Round(c.compute_ms, 1e-6);
    j["link_ms"] = Round(c.link_ms, 1e-6);
    if (o.timing) j["timing"] = {{"events", c.events}, {"wall_s", c.wall_s}, {"peak_rss_mib", o.peak_rss_mib}};
    if (!c.job_bound_ms.empty()) {
      ojson jobs = ojson::object();
      for (size_t i = 0; i < c.job_bound_ms.size(); ++i) jobs[w.job_names[i]] = Round(c.job_bound_ms[i], 1e-6);
      j["jobs_bound_ms"] = jobs;
    }
    return j.dump(1) + "\n";
  }
  std::string out = absl::StrFormat("trirace sim: %s on %s; %d iterations, median of the last %d\n", w.name,
                                    ClusterLine(cluster), w.iterations, w.iterations - w.warmup);
  absl::StrAppendFormat(&out, "%-9s %13s %9s %11s  %s\n", "mode", "iteration_ms", "speed-up", "gain share",
                        "busiest links (utilisation)");
  auto row = [&](const char* name, const sim::ModeResult& r) {
    const std::optional<double> share = c.GainShare(r);
    const std::string links = BusiestLinksText(r);
    std::string jobs;
    for (const sim::JobResult& job : r.jobs) absl::StrAppendFormat(&jobs, "%s%s %.3f", jobs.empty() ? "jobs: " : ", ", job.name, job.iteration_ms_median);
    absl::StrAppendFormat(&out, "%-9s %13.3f %8.3fx %11s  %s%s%s\n", name, r.iteration_ms_median, c.SpeedUp(r),
                          share ? absl::StrFormat("%.0f%%", 100 * *share) : "-", links, jobs.empty() ? "" : "; ", jobs);
    if (o.timing) {
      std::string releases;
      for (const auto& [reason, n] : r.release_reasons) absl::StrAppendFormat(&releases, " %s %llu", reason, (unsigned long long)n);
      absl::StrAppendFormat(&out, "%9s   %llu events, %llu flows, %.2f s (%.2f M events/s)%s%s\n", "",
                            (unsigned long long)r.events, (unsigned long long)r.flows, r.wall_s,
                            r.wall_s > 0 ? r.events / r.wall_s / 1e6 : 0, releases.empty() ? "" : "; gates:", releases);
    }
  };
  for (const sim::ModeResult& r : c.modes) {
    if (r.mode != sim::Mode::kIdeal) row(std::string(sim::ModeName(r.mode)).c_str(), r);
  }
  row("ideal", c.ideal);
  absl::StrAppendFormat(&out, "%-9s %13.3f    (compute and dependencies %.3f ms, busiest link %.3f ms)\n", "bound",
                        c.bound_ms, c.compute_ms, c.link_ms);
  if (o.timing) {
    absl::StrAppendFormat(&out, "simulator: %llu events in %.2f s over every run (%.2f M events/s), peak RSS %.0f MiB\n",
                          (unsigned long long)c.events, c.wall_s, c.wall_s > 0 ? c.events / c.wall_s / 1e6 : 0,
                          o.peak_rss_mib);
  }
  return out;
}

std::string SimCollectiveReport(const sim::Cluster& cluster, const sim::Workload& w, const sim::ModeResult& r,
                                NcclFunc func, uint64_t bytes, int ranks, const SimReportOptions& o) {
  const double time_us = r.iteration_ms_median * 1e3;
  const double algbw = time_us > 0 ? double(bytes) / (time_us * 1e-6) / 1e9 : 0;
  const double busbw = algbw * sim::BusBandwidthFactor(func, ranks);
  if (o.json) {
    ojson j;
    j["time_us"] = Round(time_us, 1e-3);
    j["algbw_GBps"] = Round(algbw, 1e-6);
    j["busbw_GBps"] = Round(busbw, 1e-6);
    j["mode"] = std::string(sim::ModeName(r.mode));
    j["workload"] = w.name;
    j["cluster"] = ClusterLine(cluster);
    j["qos"] = std::string(sim::QosName(cluster.qos));
    return j.dump(1) + "\n";
  }
  return absl::StrFormat("trirace sim: %s on %s (mode %s)\n%12s %12s %12s\n%12.3f %12.3f %12.3f\n", w.name,
                         ClusterLine(cluster), sim::ModeName(r.mode), "time_us", "algbw_GBps", "busbw_GBps", time_us,
                         algbw, busbw);
}

}  // namespace trirace::tools
