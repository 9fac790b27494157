// net_bandwidth: throughput and latency of libnccl-net-trirace.so against
// raw TCP on loopback, with the same sockets, threads and window, measured
// side by side in one run (the sides alternate; each figure is the median of
// --reps runs, and each ratio's min / median / max is over the runs, each
// run's pair measured back to back). Prints figures; never fails on a number.
//
//   net_bandwidth [--nsocks=N] [--nthreads=T] [--reps=R] [--total-mib=M]
//                 [--sizes=KiB,...] [--iterations=I] [--stripe-min=BYTES]
//                 [--side=both|plugin|raw|raw-poll] [--sweep] [--latency-only]
//                 [--plugin=PATH]          (CLI11; --help lists the flags)
//
// Throughput has two baselines: raw TCP whose caller sleeps until its
// transfer threads are done, and raw TCP whose caller polls and yields as
// NCCL's proxy thread does while it waits on a plugin. On a machine whose
// cores the transfer threads fill, the difference between the two is the
// proxy model's cost, which no transport under it can avoid.
// --sweep also measures TRIRACE_NET_NSOCKS = 1, 2, 4, 8 at 4 and 64 MiB.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "CLI/CLI.hpp"
#include "bench/plugin/bench_common.h"

namespace net_bench {
namespace {

// Which sides run: all (the default), or one alone to profile it (perf,
// strace); kRaw is both raw baselines, kRawPoll the polling one alone.
enum class Side { kBoth, kPlugin, kRaw, kRawPoll };
Side g_side = Side::kBoth;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// Figures of --reps runs of one measurement.
struct Runs {
  std::vector<double> values;
  double median() const { return Median(values); }
};

struct RatioStats {
  double min = -1, median = -1, max = -1;
};

// a[r] / b[r] per run r; -1 where either run failed or did not run.
RatioStats Ratios(const Runs& a, const Runs& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.values.size() && i < b.values.size(); ++i) {
    if (a.values[i] > 0 && b.values[i] > 0) r.push_back(a.values[i] / b.values[i]);
  }
  if (r.empty()) return {};
  std::sort(r.begin(), r.end());
  return {r.front(), Median(r), r.back()};
}

using Measurement = std::function<double(int rank, Link& link)>;

// Runs each measurement once per repetition, in turn, so that slow phases
// of a shared machine hit every side alike.
std::vector<Runs> Alternate(const std::vector<Measurement>& sides, int reps) {
  std::vector<Runs> runs(sides.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t i = 0; i < sides.size(); ++i) runs[i].values.push_back(sides[i] ? RunPair(sides[i]) : -1);
  }
  return runs;
}

struct Throughput {
  Runs plugin, raw, raw_polling;
};

Throughput MeasureThroughput(const Settings& s, int reps) {
  const bool all = g_side == Side::kBoth, raw = all || g_side == Side::kRaw;
  const bool plugin = all || g_side == Side::kPlugin, raw_poll = raw || g_side == Side::kRawPoll;
  std::vector<Runs> r = Alternate(
      {raw ? Measurement([&](int rank, Link& l) { return RawThroughput(rank, l, s, false); }) : nullptr,
       plugin ? Measurement([&](int rank, Link& l) { return PluginThroughput(rank, l, s); }) : nullptr,
       raw_poll ? Measurement([&](int rank, Link& l) { return RawThroughput(rank, l, s, true); }) : nullptr},
      reps);
  return {r[1], r[0], r[2]};
}

struct Latency {
  Runs plugin, raw_blocking, raw_polling, raw_pair;
};

Latency MeasureLatency(const Settings& s, int reps) {
  const bool plugin = g_side == Side::kBoth || g_side == Side::kPlugin;
  const bool raw = g_side == Side::kBoth || g_side == Side::kRaw || g_side == Side::kRawPoll;
  auto raw_rtt = [&](bool polling, bool pair) {
    return raw ? Measurement([&s, polling, pair](int rank, Link& l) { return RawRoundTrip(rank, l, s, polling, pair); })
               : nullptr;
  };
  std::vector<Runs> r = Alternate(
      {raw_rtt(false, false),
       plugin ? Measurement([&](int rank, Link& l) { return PluginRoundTrip(rank, l, s); }) : nullptr,
       raw_rtt(true, false), raw_rtt(true, true)},
      reps);
  return {r[1], r[0], r[2], r[3]};
}

std::string SizeName(size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

std::string Stats(const RatioStats& r) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", r.min, r.median, r.max);
  return buf;
}

}  // namespace
}  // namespace net_bench

int main(int argc, char** argv) {
  using namespace net_bench;
  Settings base;
  base.plugin_path = TRIRACE_NET_PLUGIN_PATH;
  int reps = 3, total_mib = 1024, stripe_min = 262144;
  bool sweep = false, latency_only = false;
  std::vector<int> sizes_kib = {64, 1024, 4096, 65536};
  CLI::App app("Throughput and latency of the TriRace net plugin against raw TCP on loopback, with the same\n"
               "sockets, threads and window, side by side in one run (each figure the median of --reps runs,\n"
               "the sides alternating; ratios as min / median / max over the runs). Prints figures; never\n"
               "fails on a number.",
               "net_bandwidth");
  app.add_option("--nsocks", base.nsocks, "sockets per connection")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--nthreads", base.nthreads, "helper threads per connection")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  app.add_option("--reps", reps, "runs per figure (the median is printed)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--total-mib", total_mib,
                 "MiB moved per throughput point (at least 64 messages: larger sizes move more)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--sizes", sizes_kib, "message sizes in KiB, comma separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--iterations", base.iterations, "8-byte round trips per latency figure")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  app.add_option("--stripe-min", stripe_min, "bytes below which a message goes whole over one socket")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  std::map<std::string, Side> sides{
      {"both", Side::kBoth}, {"plugin", Side::kPlugin}, {"raw", Side::kRaw}, {"raw-poll", Side::kRawPoll}};
  app.add_option("--side", g_side,
                 "run every side, or only the plugin, raw TCP or raw TCP with a polling caller (to profile it)")
      ->transform(CLI::CheckedTransformer(sides, CLI::ignore_case));
  app.add_flag("--sweep", sweep, "also measure TRIRACE_NET_NSOCKS = 1, 2, 4, 8 at 4 and 64 MiB");
  app.add_flag("--latency-only", latency_only, "only the 8-byte round trips");
  app.add_option("--plugin", base.plugin_path, "the net plugin library")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // CLI11 prints the help or the error
  }
  setenv("TRIRACE_JOB_ID", ("net-bandwidth-" + std::to_string(getpid())).c_str(), 1);
  base.stripe_min_bytes = static_cast<size_t>(stripe_min);
  auto with_size = [&](size_t bytes) {
    Settings s = base;
    s.message_bytes = bytes;
    // Enough messages that the connections' ramp-up (socket buffer
    // autotuning) does not decide the figure.
    s.total_bytes = std::max<uint64_t>(uint64_t(total_mib) << 20, uint64_t{64} * bytes);
    return s;
  };
  printf("TriRace net plugin vs raw TCP, loopback, same run: nsocks=%d nthreads=%d window=%d "
         "stripe-min=%d, %d MiB (at least 64 messages) per point, median of %d\n",
         base.nsocks, base.nthreads, base.window, stripe_min, total_mib, reps);
  if (!latency_only) {
    printf("%-8s %8s %8s %9s   %-17s %-17s\n", "size", "plugin", "raw", "raw+poll", "plugin/raw",
           "plugin/(raw+poll)");
    printf("%-8s %8s %8s %9s   %-17s %-17s\n", "", "GB/s", "GB/s", "GB/s", "min median max", "min median max");
    for (int kib : sizes_kib) {
      Settings s = with_size(size_t(kib) << 10);
      Throughput t = MeasureThroughput(s, reps);
      printf("%-8s %8.2f %8.2f %9.2f   %-17s %-17s\n", SizeName(s.message_bytes).c_str(), t.plugin.median(),
             t.raw.median(), t.raw_polling.median(), Stats(Ratios(t.plugin, t.raw)).c_str(),
             Stats(Ratios(t.plugin, t.raw_polling)).c_str());
      fflush(stdout);
    }
  }
  Latency lat = MeasureLatency(base, reps);
  printf("8-byte round trip (%d iterations), median; plugin/raw per run: min median max\n"
         "  plugin                                  %5.1f us\n"
         "  raw TCP ping-pong, blocking recv        %5.1f us  %s\n"
         "  raw TCP ping-pong, polling recv         %5.1f us  %s\n"
         "  raw TCP, one connection per direction   %5.1f us  %s (polling, as two net comms)\n",
         base.iterations, lat.plugin.median(), lat.raw_blocking.median(),
         Stats(Ratios(lat.plugin, lat.raw_blocking)).c_str(), lat.raw_polling.median(),
         Stats(Ratios(lat.plugin, lat.raw_polling)).c_str(), lat.raw_pair.median(),
         Stats(Ratios(lat.plugin, lat.raw_pair)).c_str());
  if (sweep) {
    printf("\nTRIRACE_NET_NSOCKS sweep (nthreads=%d):\n%-8s %-6s %8s %8s   %s\n", base.nthreads, "size",
           "nsocks", "plugin", "raw", "plugin/raw min median max");
    for (size_t size : {size_t{4} << 20, size_t{64} << 20}) {
      for (int nsocks : {1, 2, 4, 8}) {
        Settings s = with_size(size);
        s.nsocks = nsocks;
        Throughput t = MeasureThroughput(s, reps);
        printf("%-8s %-6d %8.2f %8.2f   %s\n", SizeName(size).c_str(), nsocks, t.plugin.median(),
               t.raw.median(), Stats(Ratios(t.plugin, t.raw)).c_str());
        fflush(stdout);
      }
    }
  }
  return 0;
}
