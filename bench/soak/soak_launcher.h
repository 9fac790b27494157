// The soak's launcher: starts the rank processes and watches them.
//
// Each rank is this program again (/proc/self/exe) with --rank R, started
// with the shim preloaded over hostccl in schedule mode with the trirace
// policy (LD_PRELOAD, TRIRACE_NCCL_LIBRARY, TRIRACE_MODE=schedule,
// TRIRACE_POLICY=trirace), a trace (TRIRACE_TRACE, TRIRACE_TRACE_BUFFER_MB),
// an INFO log (TRIRACE_DEBUG=INFO, TRIRACE_DEBUG_SUBSYS=ALL: every warning,
// the shim's summaries and a few lines per comm; TRIRACE_DEBUG_FILE) in the
// run's folder, and TRIRACE_JOB_ID=soak-<launcher pid>; the rest of the
// environment is passed on, so other TRIRACE_* settings reach the ranks.
// Rank 0 gets the write end of one pipe per other rank, which carries each
// new comm's ncclUniqueId as a hex line; a rank whose rank 0 died reads EOF
// and stops.
//
// The launcher reads every rank's stdout (sample, progress and result
// lines; anything else is copied to stderr). It kills every rank (SIGKILL)
// when one exits with an error or a signal, when one prints nothing for
// --stall-s seconds (a hang), or at --timeout-s; ranks die with the
// launcher (PR_SET_PDEATHSIG), so a killed launcher leaves none behind.
#ifndef TRIRACE_BENCH_SOAK_SOAK_LAUNCHER_H_
#define TRIRACE_BENCH_SOAK_SOAK_LAUNCHER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "soak_options.h"

namespace trirace::soak {

struct RankRun {
  pid_t pid = -1;
  std::string trace_path, log_path;
  std::vector<Sample> samples;
  bool has_result = false;
  Result result;
  int exit_code = -1;     // when it exited
  int signal = 0;         // when a signal ended it
  int64_t last_ops = 0;   // from its last sample or progress line
};

struct Run {
  std::vector<RankRun> ranks;
  double seconds = 0;
  std::string failure;    // "" when every rank exited 0
};

// Runs the ranks of `o` with their files in `dir`.
Run LaunchRanks(const Options& o, const std::string& dir);

}  // namespace trirace::soak

#endif  // TRIRACE_BENCH_SOAK_SOAK_LAUNCHER_H_
