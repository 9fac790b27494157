// Test helper: runs an NCCL program as N rank processes.
//
// Rank 0 is started first and must print a line "uid <hex>" (its
// ncclGetUniqueId, hex-encoded) on stdout; the other ranks are then started
// with "--uid <hex>" appended to their arguments. Output of every rank is
// captured; if any rank runs past the timeout all are killed.
#ifndef TRIRACE_TESTS_INTERPOSE_RANK_LAUNCHER_H_
#define TRIRACE_TESTS_INTERPOSE_RANK_LAUNCHER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "support/subprocess.h"

namespace trirace::interpose::testing {

struct RankJob {
  int nranks = 2;
  // argv of rank r (without the --uid argument).
  std::function<std::vector<std::string>(int rank)> argv;
  // Applied to this process's environment: unset_env removed first, then
  // set_env added, so a name may be in both.
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
  int timeout_ms = 60000;
};

// One result per rank; a rank that was killed for the timeout has
// timed_out set.
std::vector<testing_support::ProcessResult> LaunchRanks(const RankJob& job);

// argv of the random_ranks workload (tests/interpose/random_ranks.cc) for
// one rank: `program --lib library --rank r --nranks n --seed s --ops k`.
std::vector<std::string> RandomRanksArgv(const std::string& program, const std::string& library, int rank,
                                         int nranks, uint64_t seed, int ops);

// stdout of a rank without its "uid ..." line (which differs run to run).
std::string WithoutUidLine(const std::string& out);

}  // namespace trirace::interpose::testing

#endif  // TRIRACE_TESTS_INTERPOSE_RANK_LAUNCHER_H_
