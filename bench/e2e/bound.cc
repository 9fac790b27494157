// e2e_bound: the lower bound on one iteration of examples/hybrid_parallel
// on a test bed, computed from its configuration.
//
//   e2e_bound --hosts 4 --ranks-per-host 2 --gbps 1 [--burst BYTES] [--line-gbps G]
//             -- <hybrid_parallel flags>
//
// (CLI11 reads its own flags; those after `--` go to the example's parser.)
// Prints one line: BOUND {"bound_ms":..,"compute_ms":..,"link_ms":..,
// "busiest_link":"h0.tx","ideal_ms":..,"class_ms":..,"shared_ms":..,...}. Ranks are placed like testbed.sh places them
// (rank = host * ranks_per_host + local), with the example's rank order.
//
// compute: per stage, the emulated compute of one iteration on its critical
//   path: M micro-batches of forward + backward, plus for 1F1B the pipeline
//   fill and drain of (stages - 1) micro-batches (the flush), taking the
//   slowest stage's per-micro-batch time for those.
// link: every host uplink carries, per direction, the payload of the
//   transfers between ranks on different hosts, as the simulation lays them
//   out (hybrid::LinkBytesPerIteration): P2P activations and their
//   gradients between neighbouring stages; ring all-reduce (each rank sends
//   2(D-1)/D of its gradients to its successor in replica order, as
//   hostccl's ring does); the embedding stage's ring AllGather of ids and
//   AlltoAll of rows (forward) and gradient rows (backward). The bound is the
//   busiest direction's bytes / rate. Headers, the plugin's framing and the
//   token bucket's burst are left out, so it is a bound on the sustained
//   rate (the ideal, with the burst, can come in a little under it on small
//   configurations).
// bound = max(compute, link): no schedule can beat either.
//
// ideal / class / shared: the training loop itself simulated on ideal links
// (examples/hybrid_parallel/simulate.h, the median iteration after the
// warm-up): `ideal` with P2P and SPARSE ahead of DENSE on every link and
// the DENSE of each host's front pipeline stage at SPARSE's level (rule
// [R14]), what the TriRace policy with class priority aims at; `class`
// the same without [R14], what class priority alone aims at; `shared`
// with every flow sharing alike. They add what `bound` leaves out: the
// loop's dependencies (a stage waiting for its all-reduce, the pipeline's
// fill and drain). The
// links carry testbed.sh's token bucket: --burst bytes (default as
// testbed.sh picks it: 1 ms at the rate, at least 32768) at --line-gbps
// (default 10, what the test bed's veths report) after an idle spell.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "config.h"
#include "model.h"
#include "nlohmann/json.hpp"
#include "simulate.h"

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

}  // namespace

int main(int argc, char** argv) {
  int hosts = 0, per_host = 0;
  double gbps = 0, burst = -1, line_gbps = 10;
  std::vector<std::string> flags;
  CLI::App app("The lower bound on one iteration of examples/hybrid_parallel on a test bed (compute on the\n"
               "critical path, busiest uplink), and the iteration simulated on ideal and on shared links.\n"
               "Prints one line: BOUND {json}.",
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
  app.add_option("flags", flags, "hybrid_parallel's flags (hybrid_parallel --help), after --")
      ->type_name("");
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
  if (burst < 0) burst = std::max(gbps * 1e9 / 8 / 1000, 32768.0);
  if (line_gbps < gbps) return Usage("--line-gbps must be at least --gbps");
  if (hosts * per_host != c.world_size()) {
    return Usage("hosts x ranks-per-host = " + std::to_string(hosts * per_host) + " but the model has " +
                 std::to_string(c.world_size()) + " ranks");
  }

  const int S = c.total_stages(), M = c.micro_batches;

  // Compute on the critical path.
  double slowest_mb_us = 0, total_stage_us = 0;
  for (int s = 0; s < S; ++s) {
    const double per_mb = hybrid::IsEmbeddingStage(c, s) ? double(c.emb_fwd_us + c.emb_bwd_us)
                                                         : double(c.layers) * double(c.fwd_us + c.bwd_us);
    slowest_mb_us = std::max(slowest_mb_us, per_mb);
    total_stage_us = std::max(total_stage_us, per_mb * M);
  }
  double compute_us = total_stage_us;
  if (c.schedule == hybrid::Schedule::k1F1B) compute_us += (S - 1) * slowest_mb_us;

  // Bytes per host and direction: the simulation's own transfers.
  hybrid::LinkBytes bytes;
  if (!hybrid::LinkBytesPerIteration(c, per_host, &bytes, &error)) return Usage(error);
  const std::vector<double>& tx = bytes.tx;
  const std::vector<double>& rx = bytes.rx;
  const double bytes_per_us = gbps * 1e9 / 8 / 1e6;
  double link_us = 0;
  std::string busiest = "none";
  for (int h = 0; h < hosts; ++h) {
    if (tx[h] / bytes_per_us > link_us) {
      link_us = tx[h] / bytes_per_us;
      busiest = "h" + std::to_string(h) + ".tx";
    }
    if (rx[h] / bytes_per_us > link_us) {
      link_us = rx[h] / bytes_per_us;
      busiest = "h" + std::to_string(h) + ".rx";
    }
  }
  hybrid::SimResult ideal, by_class, shared;
  hybrid::SimOptions sim{per_host, gbps, hybrid::WireOrder::kFrontStageFirst, burst, line_gbps};
  bool simulated = hybrid::SimulateTraining(c, sim, &ideal, &error);
  sim.order = hybrid::WireOrder::kClassPriority;
  simulated = simulated && hybrid::SimulateTraining(c, sim, &by_class, &error);
  sim.order = hybrid::WireOrder::kShared;
  if (!simulated || !hybrid::SimulateTraining(c, sim, &shared, &error)) {
    std::fprintf(stderr, "e2e_bound: simulation: %s\n", error.c_str());
    return 1;
  }
  const nlohmann::ordered_json bound = {{"bound_ms", Ms(std::max(compute_us, link_us) / 1e3)},
                                        {"compute_ms", Ms(compute_us / 1e3)},
                                        {"link_ms", Ms(link_us / 1e3)},
                                        {"busiest_link", busiest},
                                        {"ideal_ms", Ms(ideal.median_ms)},
                                        {"class_ms", Ms(by_class.median_ms)},
                                        {"shared_ms", Ms(shared.median_ms)},
                                        {"hosts", hosts},
                                        {"ranks_per_host", per_host},
                                        {"gbps", gbps}};
  std::printf("BOUND %s\n", bound.dump().c_str());
  return 0;
}
