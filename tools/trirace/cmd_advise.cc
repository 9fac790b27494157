// `trirace advise DIR`: one observed run's traces to a decision
// (sim/run/advise.h; docs/simulation.md "Advice from one run").
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cluster_flags.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "sim/run/advise.h"
#include "sim/workloads/replay.h"
#include "sim_report.h"

namespace trirace::tools {
namespace {

using ojson = nlohmann::ordered_json;

struct AdviseFlags : ClusterFlags {
  std::string dir;
  bool json = false;
};

int Usage(const std::string& why) {
  std::fprintf(stderr, "trirace advise: %s (see trirace advise --help)\n", why.c_str());
  return kExitUsage;
}

std::string Text(const std::string& dir, const sim::Cluster& cluster, const sim::Workload& w, const sim::Advice& a) {
  std::string out = absl::StrFormat("trirace advise: %s (%zu ranks, %d iterations) on %s\n", dir, w.ranks.size(),
                                    w.iterations, ClusterLine(cluster));
  absl::StrAppendFormat(&out, "measured iteration   %10.3f ms  (the traces' median after %d warm-up iterations)\n", a.measured_ms,
                        w.warmup);
  absl::StrAppendFormat(&out, "replayed off         %10.3f ms  (%+.1f%%: %s)\n", a.replayed_ms,
                        a.measured_ms > 0 ? 100 * (a.replayed_ms / a.measured_ms - 1) : 0.0,
                        a.reproduced ? "reproduced" : "not reproduced");
  if (a.reproduced) {
    const sim::Comparison& c = a.comparison;
    const sim::ModeResult& off = *c.Find(sim::Mode::kOff);
    absl::StrAppendFormat(&out, "exposed communication %4.0f%% of the iteration (compute and dependencies alone: %.3f ms)\n",
                          100 * a.exposed_share, c.compute_ms);
    absl::StrAppendFormat(&out, "busiest links        %s\n", off.busiest.empty() ? "none" : BusiestLinksText(off));
    absl::StrAppendFormat(&out, "%-9s %13s %9s\n", "mode", "predicted_ms", "speed-up");
    for (const sim::ModeResult& r : c.modes) {
      absl::StrAppendFormat(&out, "%-9s %13.3f %8.3fx\n", sim::ModeName(r.mode), r.iteration_ms_median, c.SpeedUp(r));
    }
    absl::StrAppendFormat(&out, "%-9s %13.3f %8.3fx\n", "ideal", c.ideal.iteration_ms_median, c.SpeedUp(c.ideal));
    absl::StrAppendFormat(&out, "%-9s %13.3f %8.3fx  (the fastest any schedule can be)\n", "bound", c.bound_ms,
                          c.bound_ms > 0 ? off.iteration_ms_median / c.bound_ms : 0.0);
    absl::StrAppendFormat(&out, "%-44s %12s  %-8s %9s %9s\n", "what if", "off_ms", "best", "speed-up", "ideal");
    for (const sim::WhatIf& wi : a.what_ifs) {
      absl::StrAppendFormat(&out, "%-44s %12.3f  %-8s %8.3fx %8.3fx\n", wi.name, wi.off_ms, sim::ModeName(wi.best),
                            wi.best_speedup, wi.ideal_speedup);
    }
  }
  absl::StrAppendFormat(&out, "decision: %s\n", a.decision);
  return out;
}

std::string Json(const std::string& dir, const sim::Cluster& cluster, const sim::Workload& w, const sim::Advice& a) {
  ojson j;
  j["traces"] = dir;
  j["ranks"] = w.ranks.size();
  j["cluster"] = ClusterLine(cluster);
  j["measured_ms"] = a.measured_ms;
  j["replayed_off_ms"] = a.replayed_ms;
  j["reproduced"] = a.reproduced;
  j["verdict"] = !a.reproduced ? "cannot tell" : a.recommended ? "turn on" : "leave off";
  j["recommended"] = a.recommended ? ojson(std::string(sim::ModeName(*a.recommended))) : ojson(nullptr);
  j["how"] = a.recommended ? ojson(sim::HowToTurnOn(*a.recommended)) : ojson(nullptr);
  j["decision"] = a.decision;
  if (a.reproduced) {
    const sim::Comparison& c = a.comparison;
    j["exposed_share"] = a.exposed_share;
    j["compute_ms"] = c.compute_ms;
    ojson links = ojson::array();
    for (const sim::LinkUse& u : c.Find(sim::Mode::kOff)->busiest) {
      links.push_back({{"link", u.name}, {"utilisation", u.utilisation}});
    }
    j["busiest_links"] = links;
    ojson modes = ojson::object();
    for (const sim::ModeResult& r : c.modes) {
      modes[std::string(sim::ModeName(r.mode))] = {{"iteration_ms", r.iteration_ms_median}, {"speedup", c.SpeedUp(r)}};
    }
    j["modes"] = modes;
    j["ideal"] = {{"iteration_ms", c.ideal.iteration_ms_median}, {"speedup", c.SpeedUp(c.ideal)}};
    j["bound_ms"] = c.bound_ms;
    ojson what_ifs = ojson::array();
    for (const sim::WhatIf& wi : a.what_ifs) {
      what_ifs.push_back({{"what_if", wi.name}, {"off_ms", wi.off_ms}, {"best", std::string(sim::ModeName(wi.best))},
                          {"speedup", wi.best_speedup}, {"ideal_speedup", wi.ideal_speedup}});
    }
    j["what_ifs"] = what_ifs;
  }
  return j.dump(1) + "\n";
}

int RunAdvise(AdviseFlags& f) {
  if (absl::Status s = ResolveClusterFlags(&f); !s.ok()) return Usage(std::string(s.message()));
  sim::ReplayStats stats;
  absl::StatusOr<sim::Workload> w = sim::ReplayWorkload(f.dir, &stats);
  if (!w.ok()) {
    std::string why(w.status().message());  // the reader's words are the sim's flag's
    if (absl::StartsWith(why, "--replay ")) why = why.substr(9);
    return Usage(why);
  }
  std::fputs(ReplayLine("trirace advise", stats).c_str(), stderr);
  const int ranks = int(w->ranks.size());
  const bool hosts_given = f.hosts.has_value();
  absl::StatusOr<sim::Cluster> cluster = MakeReplayCluster(f, f.cluster_options, ranks, hosts_given);
  if (!cluster.ok()) return Usage(std::string(cluster.status().message()));
  // What-ifs change the options; the hosts stay the run's.
  sim::ClusterOptions options = f.cluster_options;
  options.hosts = cluster->hosts();
  const auto make = [&](const sim::ClusterOptions& o) { return MakeReplayCluster(f, o, ranks, true); };
  const double measured = sim::MedianAfterWarmup(stats.measured_iteration_ms, w->warmup);
  absl::StatusOr<sim::Advice> a = sim::Advise(make, options, *w, measured);
  if (!a.ok()) {
    std::fprintf(stderr, "trirace advise: %s\n", std::string(a.status().message()).c_str());
    return 1;
  }
  std::fputs((f.json ? Json(f.dir, *cluster, *w, *a) : Text(f.dir, *cluster, *w, *a)).c_str(), stdout);
  return 0;
}

}  // namespace

Command AddAdviseCommand(CLI::App& trirace) {
  auto f = std::make_shared<AdviseFlags>();
  CLI::App* app = trirace.add_subcommand(
      "advise", "from one observed run's traces: whether TriRace pays on this job, and which mode (docs/recipes.md)");
  app->footer(
      "Replays the traces of one run (TRIRACE_MODE=observe TRIRACE_TRACE=DIR/trace.%r.json, or trirace sim --trace)\n"
      "on the cluster it ran on, checks that the replay of off reproduces the measured iteration (else it says\n"
      "\"cannot tell\" and predicts nothing), then predicts each mode beside the ideal and the bound, with what-if\n"
      "rows (links at half and twice the rate, fabric QoS the other way, 2:1 oversubscription), and says which mode\n"
      "to turn on, or why to leave it off.\n"
      "  trirace advise DIR --cluster NAME|FILE [--hosts N] [--gbps G] [--qos none|host|fabric] [--json]");
  app->add_option("dir", f->dir, "the folder of per-rank trace files")->type_name("DIR")->required();
  AddClusterFlags(app, f.get());
  app->add_flag("--json", f->json, "print one JSON object");
  return {app, [f] { return RunAdvise(*f); }};
}

}  // namespace trirace::tools
