// The hostccl benchmarks' ranks: processes of the benchmark itself, started
// with a subcommand and the communicator's id in hex.
#ifndef TRIRACE_BENCH_HOSTCCL_RANK_PROCESSES_H_
#define TRIRACE_BENCH_HOSTCCL_RANK_PROCESSES_H_

#include <spawn.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include <nccl.h>

#include "nccl_adapter/unique_id_text.h"

extern char** environ;

namespace hostccl_bench {

// A malformed id from the parent is a bug: an all-zero id fails the rendezvous.
inline ncclUniqueId FromHex(const std::string& s) {
  ncclUniqueId id{};
  trirace::UniqueIdFromHex(s, &id);
  return id;
}

// Starts /proc/self/exe once per argument list and waits for all; returns
// how many did not exit 0.
inline int Spawn(const std::vector<std::vector<std::string>>& ranks) {
  std::vector<pid_t> pids;
  for (auto args : ranks) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) return 1;
    pids.push_back(pid);
  }
  int bad = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  return bad;
}

}  // namespace hostccl_bench

#endif  // TRIRACE_BENCH_HOSTCCL_RANK_PROCESSES_H_
