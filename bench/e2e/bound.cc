// e2e_bound: the lower bound and the simulated ideal of one iteration of
// examples/hybrid_parallel on a test bed, from its configuration, for
// run_e2e.sh's tables. Every figure comes from the simulator (sim/,
// docs/simulation.md) on its `testbed` cluster with the given shape.
//
//   e2e_bound --hosts 4 --ranks-per-host 2 --gbps 1 [--burst BYTES] [--line-gbps G]
//             -- <hybrid_parallel flags>
//
// (CLI11 reads its own flags; those after `--` go to the example's parser.)
// Prints one line: BOUND {"bound_ms":..,"compute_ms":..,"link_ms":..,
// "busiest_link":"h0.tx","ideal_ms":..,"class_ms":..,"shared_ms":..,...}.
// Ranks are placed like testbed.sh places them (rank = host *
// ranks_per_host + local), with the example's rank order.
//
//   compute   the iteration with every link unlimited: compute and the
//             loop's dependencies alone (the pipeline's fill and drain);
//   link      the busiest link direction's bytes per iteration at its
//             sustained rate;
//   bound     max(compute, link): no schedule beats either (on the
//             sustained rate: with the token bucket's bursts the ideal can
//             come in a little under it on small configurations);
//   ideal     the loop on strict class priority with free preemption and
//             the front stages' DENSE ahead ([R14]): the `ideal` mode;
//   class     the same without [R14] (the `wire` mode: class priority alone);
//   shared    every flow sharing alike (the `off` mode).
// The links carry testbed.sh's token bucket: --burst bytes (default as
// testbed.sh picks it: 1 ms at the rate, at least 32768) at --line-gbps
// (default 10, what the test bed's veths report) after an idle spell.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "config.h"
#include "nlohmann/json.hpp"
#include "sim/cluster/cluster.h"
#include "sim/run/compare.h"
#include "sim/workloads/hybrid_example.h"

namespace {

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "e2e_bound: %s\nusage: e2e_bound --hosts H --ranks-per-host R --gbps G -- "
               "<hybrid_parallel flags> (see --help)\n",
               why.c_str());
  return 2;
}

// Milliseconds to the microsecond, as the BOUND line has always shown them.
double Ms(double v) { return std::round(v * 1e3) / 1e3; }

// "nic-tx:h0/up0" -> "h0.tx", the BOUND line's name for a host's uplink.
std::string HostLinkName(const std::string& link) {
  const size_t colon = link.find(':'), slash = link.find('/');
  if (link.rfind("nic-", 0) != 0 || colon == std::string::npos || slash == std::string::npos) return link;
  return link.substr(colon + 1, slash - colon - 1) + "." + link.substr(4, 2);
}

}  // namespace

int main(int argc, char** argv) {
  int hosts = 0, per_host = 0;
  double gbps = 0, burst = -1, line_gbps = 10;
  std::vector<std::string> flags;
  CLI::App app("The lower bound on one iteration of examples/hybrid_parallel on a test bed, and the iteration\n"
               "simulated on ideal, class-priority and shared links (sim/). Prints one line: BOUND {json}.",
               "e2e_bound");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--hosts", hosts, "test-bed hosts")->type_name("H")->required();
  app.add_option("--ranks-per-host", per_host, "ranks per host (rank = host * R + local)")
      ->type_name("R")
      ->required();
  app.add_option("--gbps", gbps, "each uplink's shaped rate, Gbit/s")->type_name("G")->required();
  app.add_option("--burst", burst, "the token bucket's burst (default: 1 ms at the rate, at least 32768)")
      ->type_name("BYTES");
  app.add_option("--line-gbps", line_gbps, "the links' line rate after an idle spell (what veths report)")
      ->type_name("G")
      ->capture_default_str();
  app.add_option("flags", flags, "hybrid_parallel's flags (hybrid_parallel --help), after --")->type_name("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    return Usage(e.what());
  }
  hybrid::Config c;
  std::string error;
  if (!hybrid::ParseArgs(flags, &c, &error) || !hybrid::ValidateModel(c, &error)) return Usage(error);
  if (hosts < 1 || per_host < 1 || gbps <= 0) return Usage("--hosts, --ranks-per-host and --gbps must be > 0");
  if (line_gbps < gbps) return Usage("--line-gbps must be at least --gbps");
  if (hosts * per_host != c.world_size()) {
    return Usage("hosts x ranks-per-host = " + std::to_string(hosts * per_host) + " but the model has " +
                 std::to_string(c.world_size()) + " ranks");
  }
  trirace::sim::ClusterOptions options;
  options.hosts = hosts;
  options.ranks_per_host = per_host;
  options.gbps = gbps;
  absl::StatusOr<trirace::sim::Cluster> cluster = trirace::sim::MakeCluster("testbed", options);
  if (!cluster.ok()) return Usage(std::string(cluster.status().message()));
  if (burst >= 0) cluster->burst_bytes = burst;
  cluster->line_gbps = line_gbps;
  absl::StatusOr<trirace::sim::Workload> workload = trirace::sim::HybridExampleWorkload(c);
  if (!workload.ok()) return Usage(std::string(workload.status().message()));
  using trirace::sim::Mode;
  absl::StatusOr<trirace::sim::Comparison> cmp =
      trirace::sim::CompareModes(*cluster, *workload, {Mode::kIdeal, Mode::kWire, Mode::kOff});
  if (!cmp.ok()) {
    std::fprintf(stderr, "e2e_bound: simulation: %s\n", std::string(cmp.status().message()).c_str());
    return 1;
  }
  const std::string busiest = cmp->ideal.busiest.empty() ? "none" : HostLinkName(cmp->ideal.busiest.front().name);
  const nlohmann::ordered_json bound = {{"bound_ms", Ms(cmp->bound_ms)},
                                        {"compute_ms", Ms(cmp->compute_ms)},
                                        {"link_ms", Ms(cmp->link_ms)},
                                        {"busiest_link", busiest},
                                        {"ideal_ms", Ms(cmp->ideal.iteration_ms_median)},
                                        {"class_ms", Ms(cmp->Find(Mode::kWire)->iteration_ms_median)},
                                        {"shared_ms", Ms(cmp->Find(Mode::kOff)->iteration_ms_median)},
                                        {"hosts", hosts},
                                        {"ranks_per_host", per_host},
                                        {"gbps", gbps}};
  std::printf("BOUND %s\n", bound.dump().c_str());
  return 0;
}
