// hostccl_hop: what one small hop between two ranks costs in hostccl, and
// what a rank waiting for its data costs in CPU.
//
//   hostccl_hop [--bytes 1024] [--round-trips 500] [--gap-us 0,2000] [--idle-ranks 8]
//
// 1. Hop: two ranks (processes on this host) ping-pong `bytes` with
//    ncclSend / ncclRecv on host streams, every op enqueued ahead and timed
//    to the streams' end. With a gap G, each side's stream computes G us
//    (hostcclStreamCompute) before it sends, so the receive has waited G us
//    when the data comes, as in a pipeline; one hop is then
//    (time / round trips - 2G) / 2: the API, the stream, the communicator's
//    executor and the transport (shared memory, or the net plugin with
//    TRIRACE_HOSTCCL_SHM=0). Best and median of 7 runs; runs with a gap
//    make at most 100 round trips.
// 2. Waiting: `idle-ranks` ranks; each process's CPU time (getrusage) over
//    1 s (a) with nothing queued, and (b) with a receive posted whose send
//    comes 1 s later, as in a pipeline bubble. Printed as the mean and the
//    largest share of one core per rank (rank 0, the sender, left out of b).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <hostccl/stream.h>
#include <nccl.h>

#include "CLI/CLI.hpp"
#include "bench/hostccl/rank_processes.h"
#include "common/clock.h"
#include "nccl_adapter/unique_id_text.h"

namespace {

using hostccl_bench::FromHex;
using hostccl_bench::Spawn;

double Now() { return trirace::MonotonicNs() * 1e-9; }

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

#define HOP_CHECK(call)                                                        \
  do {                                                                         \
    if ((call) != ncclSuccess) {                                               \
      std::fprintf(stderr, "rank %d: %s failed at line %d\n", rank, #call, __LINE__); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int HopRank(int rank, const ncclUniqueId& id, size_t bytes, int round_trips, int gap_us) {
  ncclComm_t comm;
  HOP_CHECK(ncclCommInitRank(&comm, 2, id, rank));
  cudaStream_t s;
  hostcclStreamCreate(&s);
  std::vector<char> out(std::max<size_t>(bytes, 1), static_cast<char>(rank)), in(out.size());
  const int peer = 1 - rank;
  auto run = [&]() -> int {
    for (int i = 0; i < round_trips; ++i) {
      if (rank == 1) HOP_CHECK(ncclRecv(in.data(), bytes, ncclChar, peer, comm, s));
      if (gap_us > 0) HOP_CHECK(hostcclStreamCompute(s, gap_us));
      HOP_CHECK(ncclSend(out.data(), bytes, ncclChar, peer, comm, s));
      if (rank == 0) HOP_CHECK(ncclRecv(in.data(), bytes, ncclChar, peer, comm, s));
    }
    return hostcclStreamSynchronize(s) == ncclSuccess ? 0 : 1;
  };
  if (run() != 0) return 1;  // warm-up
  std::vector<double> us;
  for (int k = 0; k < 7; ++k) {
    const double t0 = Now();
    if (run() != 0) return 1;
    us.push_back(((Now() - t0) / round_trips * 1e6 - 2.0 * gap_us) / 2);
  }
  std::sort(us.begin(), us.end());
  if (rank == 0) {
    std::printf("%zu-byte hop after %d us of waiting (ping-pong on host streams, 2 ranks, %d round trips, 7 runs): "
                "best %.1f us, median %.1f us\n", bytes, gap_us, round_trips, us.front(), us[us.size() / 2]);
  }
  hostcclStreamDestroy(s);
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 1;
}

int WaitRank(int rank, int n, const ncclUniqueId& id) {
  ncclComm_t comm;
  HOP_CHECK(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  hostcclStreamCreate(&s);
  std::vector<double> mine(2, 0), all(2 * n, 0);
  auto barrier = [&] {
    ncclAllReduce(mine.data(), all.data(), 1, ncclDouble, ncclSum, comm, s);
    return hostcclStreamSynchronize(s) == ncclSuccess;
  };
  if (!barrier()) return 1;
  // (a) nothing queued
  double c0 = CpuSeconds(), t0 = Now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  mine[0] = (CpuSeconds() - c0) / (Now() - t0);
  if (!barrier()) return 1;
  // (b) a receive that waits 1 s for its data
  char byte = 0;
  c0 = CpuSeconds(), t0 = Now();
  if (rank == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    HOP_CHECK(ncclGroupStart());
    for (int p = 1; p < n; ++p) HOP_CHECK(ncclSend(&byte, 1, ncclChar, p, comm, s));
    HOP_CHECK(ncclGroupEnd());
  } else {
    HOP_CHECK(ncclRecv(&byte, 1, ncclChar, 0, comm, s));
  }
  if (hostcclStreamSynchronize(s) != ncclSuccess) return 1;
  mine[1] = (CpuSeconds() - c0) / (Now() - t0);
  HOP_CHECK(ncclAllGather(mine.data(), all.data(), 2, ncclDouble, comm, s));
  if (hostcclStreamSynchronize(s) != ncclSuccess) return 1;
  if (rank == 0) {
    double sum_a = 0, max_a = 0, sum_b = 0, max_b = 0;
    for (int r = 0; r < n; ++r) {
      sum_a += all[2 * r], max_a = std::max(max_a, all[2 * r]);
      if (r > 0) sum_b += all[2 * r + 1], max_b = std::max(max_b, all[2 * r + 1]);
    }
    std::printf("%d ranks, CPU per rank over 1 s: nothing queued mean %.1f%% max %.1f%% of a core; "
                "waiting in a receive mean %.1f%% max %.1f%%\n", n, 100 * sum_a / n, 100 * max_a,
                100 * sum_b / (n - 1), 100 * max_b);
  }
  hostcclStreamDestroy(s);
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app("What a small hop between two hostccl ranks costs, and the CPU of ranks that wait.", "hostccl_hop");
  size_t bytes = 1024;
  int round_trips = 500, idle_ranks = 8;
  std::vector<int> gaps = {0, 2000};
  app.add_option("--bytes", bytes, "message size of the hop")->capture_default_str()->check(CLI::Range(0, 1 << 26));
  app.add_option("--round-trips", round_trips, "ping-pongs per run")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--gap-us", gaps, "compute before each send, us; one line each")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--idle-ranks", idle_ranks, "ranks of the waiting measurement (0: skip it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  struct {
    int rank = 0, nranks = 0, round_trips = 0, gap_us = 0;
    size_t bytes = 0;
    std::string id_hex;
  } child;
  CLI::App* hop_rank = app.add_subcommand("hop", "")->group("");
  hop_rank->add_option("rank", child.rank)->required();
  hop_rank->add_option("id", child.id_hex)->required();
  hop_rank->add_option("bytes", child.bytes)->required();
  hop_rank->add_option("round_trips", child.round_trips)->required();
  hop_rank->add_option("gap_us", child.gap_us)->required();
  CLI::App* wait_rank = app.add_subcommand("wait", "")->group("");
  wait_rank->add_option("rank", child.rank)->required();
  wait_rank->add_option("nranks", child.nranks)->required();
  wait_rank->add_option("id", child.id_hex)->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (hop_rank->parsed()) {
    return HopRank(child.rank, FromHex(child.id_hex), child.bytes, child.round_trips, child.gap_us);
  }
  if (wait_rank->parsed()) return WaitRank(child.rank, child.nranks, FromHex(child.id_hex));

  ncclUniqueId id;
  std::string hex;
  for (int gap : gaps) {
    if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
    hex = trirace::UniqueIdToHex(id);
    const std::string b = std::to_string(bytes), g = std::to_string(gap);
    const std::string k = std::to_string(gap > 0 ? std::min(round_trips, 100) : round_trips);
    if (Spawn({{"x", "hop", "0", hex, b, k, g}, {"x", "hop", "1", hex, b, k, g}}) != 0) return 1;
  }
  if (idle_ranks >= 2) {
    if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
    hex = trirace::UniqueIdToHex(id);
    std::vector<std::vector<std::string>> ranks;
    for (int r = 0; r < idle_ranks; ++r) ranks.push_back({"x", "wait", std::to_string(r), std::to_string(idle_ranks), hex});
    if (Spawn(ranks) != 0) return 1;
  }
  return 0;
}
