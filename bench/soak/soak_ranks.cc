// soak_ranks: the soak benchmark and test of issue #41 ("Long runs").
//
// Runs --ops NCCL ops (10^6 by default) on --nranks rank processes (2)
// over --comms communicators (1000) that are created, used and destroyed
// over the run, with libtrirace.so preloaded over hostccl in schedule mode
// with the trirace policy, every result checked; samples each rank's RSS,
// fds, threads, shared memory and the shim's trace buffer 20 times, prints
// the table and one verdict per column, and exits 0 only when every column
// stays bounded after the warm-up, every result is right and no rank fails
// or hangs.
//
//   soak_ranks --shim build/lib/libtrirace.so --nccl build/hostccl/lib/libnccl.so.2 [--ops N --comms C ...]
//
// bench/soak/soak.sh runs the full soak from a build folder; the ctest
// Soak.HundredThousandOps runs 10^5 ops over 100 comms. The parts:
// soak_launcher.h (processes), soak_rank.h (the workload), soak_probe.h
// (what is measured), soak_report.h (table and verdicts). Exit status: 0
// pass, 1 fail, 2 usage.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "soak_launcher.h"
#include "soak_options.h"
#include "soak_probe.h"
#include "soak_rank.h"
#include "soak_report.h"

int main(int argc, char** argv) {
  using namespace trirace::soak;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(Usage(), stdout);
      return 0;
    }
  }
  Options o;
  std::string error;
  if (!ParseOptions(argc, argv, &o, &error)) {
    std::fprintf(stderr, "soak_ranks: %s\n%s", error.c_str(), Usage());
    return 2;
  }
  if (o.rank >= 0) return RunRank(o);

  // Absolute paths: the ranks run the same arguments from wherever they start.
  std::error_code ec;
  o.shim = std::filesystem::absolute(o.shim, ec).string();
  o.nccl = std::filesystem::absolute(o.nccl, ec).string();
  for (const std::string& lib : {o.shim, o.nccl}) {
    if (!std::filesystem::exists(lib)) {
      std::fprintf(stderr, "soak_ranks: %s does not exist\n", lib.c_str());
      return 2;
    }
  }
  const bool own_dir = o.dir.empty();
  if (own_dir) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/trirace-soak-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("soak_ranks: mkdtemp");
      return 2;
    }
    o.dir = pattern;
  } else {
    std::filesystem::create_directories(o.dir, ec);
  }
  o.dir = std::filesystem::absolute(o.dir, ec).string();
  o.job = "soak-" + std::to_string(getpid());

  const Run run = LaunchRanks(o, o.dir);
  const bool pass = Report(o, run, stdout);
  std::fflush(stdout);
  std::filesystem::remove(OccupancySegmentPath(o.job), ec);  // a killed rank's; the name is this run's alone
  if (own_dir && pass && !o.keep) {
    std::filesystem::remove_all(o.dir, ec);
  } else if (own_dir && !o.keep) {
    // A failed run keeps the shim's logs (small) for a look; the traces
    // (about 0.5 KiB per op) only with --keep.
    for (const RankRun& rr : run.ranks) std::filesystem::remove(rr.trace_path, ec);
    std::fprintf(stderr, "soak: the ranks' logs are in %s (--keep keeps the traces too)\n", o.dir.c_str());
  } else {
    std::fprintf(stderr, "soak: traces and logs are in %s\n", o.dir.c_str());
  }
  return pass ? 0 : 1;
}
