// soak_ranks' settings and the sample line its rank processes print.
//
// One program plays two parts (soak_ranks.cc): without --rank it is the
// launcher (soak_launcher.h), which starts --nranks copies of itself with
// --rank R and the pipes that carry the communicators' unique ids; with
// --rank it is one rank (soak_rank.h). Every rank prints one "sample ..."
// line per wave (soak_rank.h says what a wave is) and a "result ..." line at
// the end; the launcher parses them (ParseSample, ParseResult) into the
// table and the verdicts (soak_report.h).
#ifndef TRIRACE_BENCH_SOAK_SOAK_OPTIONS_H_
#define TRIRACE_BENCH_SOAK_SOAK_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace trirace::soak {

struct Options {
  // What to run.
  std::string shim;             // libtrirace.so, preloaded into every rank
  std::string nccl;             // the libnccl.so.2 the ranks load (hostccl's)
  int nranks = 2;
  int64_t ops = 1000000;        // collectives every rank issues, in all
  int comms = 1000;             // communicators created over the run
  int alive = 3;                // at most this many alive at once
  int samples = 20;             // waves: one sample at the end of each
  uint64_t seed = 1;            // the op mix (the same on every rank)
  int trace_buffer_mb = 1;      // TRIRACE_TRACE_BUFFER_MB of the ranks
  // Judging (after the warm-up: samples at ops >= warmup * ops).
  double warmup = 0.1;
  double rss_limit_mib = 8;     // growth allowed per column past the warm-up
  int fd_limit = 0;
  int thread_limit = 0;
  int shm_limit = 0;
  // Running.
  std::string dir;              // traces and logs; default: a new temporary folder, removed
  bool keep = false;            // keep `dir` (the default one too)
  int stall_s = 120;            // a rank silent this long has hung
  int timeout_s = 0;            // the whole run; 0: none
  bool quiet = false;           // no progress lines on stderr
  // Set by the launcher for a rank.
  int rank = -1;
  std::vector<int> uid_fds;     // rank 0: a write end per other rank; others: one read end
  std::string log;              // the rank's TRIRACE_DEBUG_FILE
  std::string job;              // TRIRACE_JOB_ID of the run (names the occupancy segment)

  int64_t ops_per_comm() const { return ops / comms; }
  int64_t ops_per_wave() const { return ops / samples; }
};

// Parses `--name value` pairs (and the flags --keep, --quiet); on a mistake
// returns false with `error` saying which.
bool ParseOptions(int argc, char** argv, Options* options, std::string* error);
// The usage text.
const char* Usage();

// One rank's view at the end of a wave (ops = 0: before the first comm).
struct Sample {
  int rank = 0;
  int64_t ops = 0;
  int64_t comms_created = 0;
  int64_t comms_alive = 0;      // at the end of the wave, before they are destroyed
  int64_t rss_kb = 0;           // VmRSS
  int64_t fds = 0;              // entries of /proc/self/fd
  int64_t threads = 0;          // Threads of /proc/self/status
  int64_t shm_objects = 0;      // names in /dev/shm this job made (soak_probe.h)
  int64_t shm_maps = 0;         // /dev/shm files this process maps, unlinked ones too
  // The shim's trace buffer, from the summary line it logs when the wave's
  // last comm is destroyed; trace_capacity 0: no such line (before the first wave).
  int64_t trace_records = 0;
  int64_t trace_dropped = 0;
  int64_t trace_waiting = 0;
  int64_t trace_high = 0;
  int64_t trace_capacity = 0;
  double seconds = 0;           // since the rank started
};

// What a rank checked.
struct Result {
  int rank = 0;
  int64_t ops = 0;
  int64_t values_checked = 0;
  int64_t wrong_values = 0;     // results that differ from the expected value
  int64_t failed_calls = 0;     // an NCCL or stream call that did not return success
  int64_t annotation_errors = 0;
  // Trace records the rank's calls make the shim write: one per op (two for
  // a grouped Send/Recv), comm creation and destruction, iteration mark.
  int64_t trace_caused = 0;
  std::string first_problem;    // "" when none
};

std::string FormatSample(const Sample& s);
bool ParseSample(const std::string& line, Sample* s);
std::string FormatResult(const Result& r);
bool ParseResult(const std::string& line, Result* r);

}  // namespace trirace::soak

#endif  // TRIRACE_BENCH_SOAK_SOAK_OPTIONS_H_
