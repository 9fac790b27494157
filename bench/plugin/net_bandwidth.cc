// net_bandwidth: throughput and latency of libnccl-net-trirace.so against
// raw TCP on loopback, with the same sockets, threads and window, measured
// side by side in one run (each figure is the median of --reps runs,
// plugin and raw alternating). Prints figures; never fails on a number.
//
//   net_bandwidth [--nsocks=N] [--nthreads=T] [--reps=R] [--total-mib=M]
//                 [--iterations=I] [--stripe-min=BYTES] [--sweep] [--latency-only]
//                 [--plugin=PATH]          (CLI11; --help lists the flags)
// --sweep also measures TRIRACE_NET_NSOCKS = 1, 2, 4, 8 at 4 and 64 MiB.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "CLI/CLI.hpp"
#include "bench/plugin/bench_common.h"

namespace net_bench {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

struct Pairwise {
  double plugin = 0;
  double raw = 0;
  double raw_polling = 0;  // latency only
  double raw_pair = 0;     // latency only: polling, one connection per direction
};

Pairwise Measure(bool latency, const Settings& s, int reps) {
  std::vector<double> plugin, raw, polling, pair;
  for (int r = 0; r < reps; ++r) {
    raw.push_back(RunPair([&](int rank, Link& link) {
      return latency ? RawRoundTrip(rank, link, s, false, false) : RawThroughput(rank, link, s);
    }));
    plugin.push_back(RunPair([&](int rank, Link& link) {
      return latency ? PluginRoundTrip(rank, link, s) : PluginThroughput(rank, link, s);
    }));
    if (latency) {
      polling.push_back(RunPair([&](int rank, Link& link) { return RawRoundTrip(rank, link, s, true, false); }));
      pair.push_back(RunPair([&](int rank, Link& link) { return RawRoundTrip(rank, link, s, true, true); }));
    }
  }
  return {Median(plugin), Median(raw), Median(polling), Median(pair)};
}

std::string SizeName(size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace
}  // namespace net_bench

int main(int argc, char** argv) {
  using namespace net_bench;
  Settings base;
  base.plugin_path = TRIRACE_NET_PLUGIN_PATH;
  int reps = 3, total_mib = 1024, stripe_min = 262144;
  bool sweep = false, latency_only = false;
  CLI::App app("Throughput and latency of the TriRace net plugin against raw TCP on loopback, with the same\n"
               "sockets, threads and window, side by side in one run (each figure the median of --reps runs,\n"
               "plugin and raw alternating). Prints figures; never fails on a number.",
               "net_bandwidth");
  app.add_option("--nsocks", base.nsocks, "sockets per connection")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--nthreads", base.nthreads, "helper threads per connection")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  app.add_option("--reps", reps, "runs per figure (the median is printed)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--total-mib", total_mib, "MiB moved per throughput point")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--iterations", base.iterations, "8-byte round trips per latency figure")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  app.add_option("--stripe-min", stripe_min, "bytes below which a message goes whole over one socket")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  app.add_flag("--sweep", sweep, "also measure TRIRACE_NET_NSOCKS = 1, 2, 4, 8 at 4 and 64 MiB");
  app.add_flag("--latency-only", latency_only, "only the 8-byte round trips");
  app.add_option("--plugin", base.plugin_path, "the net plugin library")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // CLI11 prints the help or the error
  }
  setenv("TRIRACE_JOB_ID", ("net-bandwidth-" + std::to_string(getpid())).c_str(), 1);
  base.total_bytes = uint64_t(total_mib) << 20;
  base.stripe_min_bytes = static_cast<size_t>(stripe_min);
  printf("TriRace net plugin vs raw TCP, loopback, same run: nsocks=%d nthreads=%d window=%d "
         "stripe-min=%d, %d MiB per point, median of %d\n",
         base.nsocks, base.nthreads, base.window, stripe_min, total_mib, reps);
  printf("%-8s %12s %12s %8s\n", "size", "plugin GB/s", "raw GB/s", "ratio");
  for (size_t size : {size_t{64} << 10, size_t{1} << 20, size_t{4} << 20, size_t{64} << 20}) {
    if (latency_only) break;
    Settings s = base;
    s.message_bytes = size;
    Pairwise m = Measure(false, s, reps);
    printf("%-8s %12.2f %12.2f %8.2f\n", SizeName(size).c_str(), m.plugin, m.raw, m.plugin / m.raw);
    fflush(stdout);
  }
  Pairwise lat = Measure(true, base, reps);
  printf("8-byte round trip (%d iterations): plugin %.1f us\n"
         "  raw TCP ping-pong, blocking recv        %.1f us  ratio %.2f\n"
         "  raw TCP ping-pong, polling recv         %.1f us  ratio %.2f\n"
         "  raw TCP, one connection per direction   %.1f us  ratio %.2f (polling, as two net comms)\n",
         base.iterations, lat.plugin, lat.raw, lat.plugin / lat.raw, lat.raw_polling,
         lat.plugin / lat.raw_polling, lat.raw_pair, lat.plugin / lat.raw_pair);
  if (sweep) {
    printf("\nTRIRACE_NET_NSOCKS sweep (nthreads=%d):\n%-8s %-6s %12s %12s %8s\n", base.nthreads, "size",
           "nsocks", "plugin GB/s", "raw GB/s", "ratio");
    for (size_t size : {size_t{4} << 20, size_t{64} << 20}) {
      for (int nsocks : {1, 2, 4, 8}) {
        Settings s = base;
        s.message_bytes = size;
        s.nsocks = nsocks;
        Pairwise m = Measure(false, s, reps);
        printf("%-8s %-6d %12.2f %12.2f %8.2f\n", SizeName(size).c_str(), nsocks, m.plugin, m.raw,
               m.plugin / m.raw);
        fflush(stdout);
      }
    }
  }
  return 0;
}
