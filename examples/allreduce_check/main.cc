// allreduce_check: runs an AllReduce across N processes and verifies it.
//
//   LD_LIBRARY_PATH=<build>/hostccl/lib <build>/bin/allreduce_check --nranks 4 [--count 1048576]
//
// The first process creates the ncclUniqueId, starts N ranks as child
// processes (the id travels in argv as hex), and reports whether every rank
// saw the right sums. Each rank sums floats (exact small integers, so the
// expected value is exact) on a hostccl host stream.
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <hostccl/stream.h>
#include <nccl.h>

#include "CLI/CLI.hpp"
#include "nccl_adapter/unique_id_text.h"

extern char** environ;

namespace {

#define CHECK_NCCL(call)                                                                  \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      std::fprintf(stderr, "%s failed: %s\n", #call, ncclGetErrorString(r_));             \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

int RunRank(int rank, int nranks, size_t count, const ncclUniqueId& id) {
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t stream;
  CHECK_NCCL(hostcclStreamCreate(&stream));
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
  CHECK_NCCL(ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, stream));
  CHECK_NCCL(hostcclStreamSynchronize(stream));
  ncclResult_t async = ncclSuccess;
  CHECK_NCCL(ncclCommGetAsyncError(comm, &async));
  CHECK_NCCL(async);
  const float ranks_sum = static_cast<float>(nranks * (nranks + 1) / 2);
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    if (recv[i] != ranks_sum * static_cast<float>(i % 7 + 1)) ++bad;
  }
  CHECK_NCCL(hostcclStreamDestroy(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  if (bad != 0) {
    std::fprintf(stderr, "rank %d: %zu of %zu elements wrong\n", rank, bad, count);
    return 1;
  }
  std::printf("rank %d of %d: %zu elements correct\n", rank, nranks, count);
  return 0;
}

int Launch(const char* self, int nranks, size_t count) {
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  std::string hex = trirace::UniqueIdToHex(id), n = std::to_string(nranks), c = std::to_string(count);
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    std::string rank = std::to_string(r);
    std::vector<char*> argv = {const_cast<char*>(self), const_cast<char*>("--rank"), rank.data(),
                               const_cast<char*>("--nranks"), n.data(), const_cast<char*>("--count"),
                               c.data(), const_cast<char*>("--id"), hex.data(), nullptr};
    pid_t pid;
    if (posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ) != 0) {
      std::perror("posix_spawn");
      return 1;
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  std::printf("allreduce_check: %d ranks, %zu floats: %s\n", nranks, count, failed == 0 ? "PASSED" : "FAILED");
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = -1, nranks = 2;
  size_t count = 1 << 20;
  std::string id_hex;
  CLI::App app("Runs an AllReduce across N processes (children of this one) and verifies every rank's sums.",
               "allreduce_check");
  app.add_option("--nranks", nranks, "ranks to start")->capture_default_str();
  app.add_option("--count", count, "floats per rank")->capture_default_str();
  // What the launcher passes to each rank it starts.
  app.add_option("--rank", rank, "this process's rank (set by the launcher)")->group("rank processes");
  app.add_option("--id", id_hex, "the ncclUniqueId as hex (set by the launcher)")->group("rank processes");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // CLI11 prints the help or the error
  }
  if (nranks < 1) {
    std::fprintf(stderr, "--nranks must be at least 1\n");
    return 2;
  }
  if (rank < 0) return Launch("/proc/self/exe", nranks, count);
  ncclUniqueId id;
  if (!trirace::UniqueIdFromHex(id_hex, &id)) {
    std::fprintf(stderr, "--id: expected %zu hex digits\n", 2 * sizeof(id.internal));
    return 2;
  }
  return RunRank(rank, nranks, count, id);
}
