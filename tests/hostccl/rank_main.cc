// hostccl_test_rank: the multi-process test program.
//
//   hostccl_test_rank launch <nranks> <scenario> [arg] [--start K] [--victim R]
//       creates the ncclUniqueId, starts ranks 0..K-1 (K = nranks by default)
//       as child processes and waits for them (at most 150 s, then kills
//       them); exits 0 when every rank exited 0, except the victim R, which
//       must have died of SIGKILL.
//   hostccl_test_rank rank <r> <nranks> <id-hex> <scenario> [arg]
//       one rank (started by launch).
//
// Scenarios: sweep [small], groups, split, nonblocking, kill, missing_rank.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "nccl_adapter/unique_id_text.h"
#include "support/subprocess.h"
#include "tests/hostccl/rank_util.h"

namespace hostccl_test {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Waits for the stream, then returns the communicator's async state.
ncclResult_t SyncAndState(ncclComm_t comm, cudaStream_t s) {
  hostcclStreamSynchronize(s);
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  return async;
}

bool AllEqual(const std::vector<int>& v, int want) {
  for (int x : v) {
    if (x != want) return false;
  }
  return true;
}

int Groups(const RankContext& x) {
  const int n = x.nranks, r = x.rank;
  ncclComm_t comm;
  HT_CHECK_NCCL(ncclCommInitRank(&comm, n, x.id, r));
  cudaStream_t s;
  HT_CHECK_NCCL(hostcclStreamCreate(&s));
  Report report;
  // Everyone sends to everyone (self included), then receives, in one group;
  // 1 MiB per peer, more than the sockets buffer.
  const size_t m = 256 * 1024;
  std::vector<int> out(n * m), in(n * m, -1);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < m; ++i) out[p * m + i] = r * 1000 + p + static_cast<int>(i % 13);
  }
  HT_CHECK_NCCL(ncclGroupStart());
  for (int p = 0; p < n; ++p) HT_CHECK_NCCL(ncclSend(out.data() + p * m, m, ncclInt32, p, comm, s));
  for (int p = 0; p < n; ++p) HT_CHECK_NCCL(ncclRecv(in.data() + p * m, m, ncclInt32, p, comm, s));
  HT_CHECK_NCCL(ncclGroupEnd());
  bool ok = SyncAndState(comm, s) == ncclSuccess;
  for (int p = 0; ok && p < n; ++p) {
    for (size_t i = 0; i < m; ++i) ok = ok && in[p * m + i] == p * 1000 + r + static_cast<int>(i % 13);
  }
  report.Check(ok, "alltoall_sendrecv_group", "wrong data received");

  // Several collectives in one group.
  std::vector<int> a(1000, r + 1), a_out(1000, 0), g_out(n * 10, -1), b(500, r == 0 ? 42 : 0);
  std::vector<int> g_in(10, r);
  HT_CHECK_NCCL(ncclGroupStart());
  HT_CHECK_NCCL(ncclAllReduce(a.data(), a_out.data(), a.size(), ncclInt32, ncclSum, comm, s));
  HT_CHECK_NCCL(ncclAllGather(g_in.data(), g_out.data(), 10, ncclInt32, comm, s));
  HT_CHECK_NCCL(ncclBcast(b.data(), b.size(), ncclInt32, 0, comm, s));
  HT_CHECK_NCCL(ncclGroupEnd());
  ok = SyncAndState(comm, s) == ncclSuccess && AllEqual(a_out, n * (n + 1) / 2) && AllEqual(b, 42);
  for (int p = 0; ok && p < n; ++p) ok = g_out[p * 10] == p && g_out[p * 10 + 9] == p;
  report.Check(ok, "mixed_collectives_group", "wrong results");

  // Nested groups: the inner GroupEnd issues nothing; the outer one does.
  std::vector<int> c(100, 2), c_out(100, 0), ring_in(100, -1), ring_out(100, r);
  HT_CHECK_NCCL(ncclGroupStart());
  HT_CHECK_NCCL(ncclGroupStart());
  HT_CHECK_NCCL(ncclAllReduce(c.data(), c_out.data(), c.size(), ncclInt32, ncclProd, comm, s));
  HT_CHECK_NCCL(ncclGroupEnd());
  bool idle_inside = hostcclStreamQuery(s) == ncclSuccess && AllEqual(c_out, 0);
  HT_CHECK_NCCL(ncclSend(ring_out.data(), 100, ncclInt32, (r + 1) % n, comm, s));
  HT_CHECK_NCCL(ncclRecv(ring_in.data(), 100, ncclInt32, (r + n - 1) % n, comm, s));
  HT_CHECK_NCCL(ncclGroupEnd());
  ok = SyncAndState(comm, s) == ncclSuccess && AllEqual(c_out, 1 << n) && AllEqual(ring_in, (r + n - 1) % n);
  report.Check(idle_inside, "nested_group_defers", "work started before the outer ncclGroupEnd");
  report.Check(ok, "nested_groups", "wrong results");

  std::printf("rank %d of %d: %d cases passed, %d failed\n", r, n, report.passed(), report.failed());
  HT_CHECK_NCCL(hostcclStreamDestroy(s));
  HT_CHECK_NCCL(ncclCommDestroy(comm));
  return report.failed() == 0 ? 0 : 1;
}

int Split(const RankContext& x) {
  const int n = x.nranks, r = x.rank;
  ncclComm_t parent, child, odd;
  HT_CHECK_NCCL(ncclCommInitRank(&parent, n, x.id, r));
  cudaStream_t s;
  HT_CHECK_NCCL(hostcclStreamCreate(&s));
  Report report;
  // Color by parity, keys reversed: the child ranks run in reverse order.
  HT_CHECK_NCCL(ncclCommSplit(parent, r % 2, n - r, &child, nullptr));
  int members = (n + 1 - r % 2) / 2, crank = -1, ccount = -1;
  HT_CHECK_NCCL(ncclCommUserRank(child, &crank));
  HT_CHECK_NCCL(ncclCommCount(child, &ccount));
  int expected_rank = members - 1 - r / 2;
  report.Check(ccount == members && crank == expected_rank, "split_rank_order",
               "child rank " + std::to_string(crank) + " of " + std::to_string(ccount) + ", expected " +
                   std::to_string(expected_rank) + " of " + std::to_string(members));
  // Parent and child operations interleaved on one stream.
  std::vector<int> v(4096, r), p1(4096), c1(4096), p2(4096);
  HT_CHECK_NCCL(ncclAllReduce(v.data(), p1.data(), v.size(), ncclInt32, ncclSum, parent, s));
  HT_CHECK_NCCL(ncclAllReduce(v.data(), c1.data(), v.size(), ncclInt32, ncclSum, child, s));
  HT_CHECK_NCCL(ncclAllReduce(v.data(), p2.data(), v.size(), ncclInt32, ncclMax, parent, s));
  bool ok = SyncAndState(parent, s) == ncclSuccess && SyncAndState(child, s) == ncclSuccess;
  int child_sum = 0;
  for (int q = r % 2; q < n; q += 2) child_sum += q;
  report.Check(ok && AllEqual(p1, n * (n - 1) / 2) && AllEqual(c1, child_sum) && AllEqual(p2, n - 1),
               "split_interleaved_ops", "wrong results");
  // Rank 0 opts out.
  HT_CHECK_NCCL(ncclCommSplit(parent, r == 0 ? NCCL_SPLIT_NOCOLOR : 7, r, &odd, nullptr));
  if (r == 0) {
    report.Check(odd == nullptr, "split_nocolor_null", "NCCL_SPLIT_NOCOLOR rank got a communicator");
  } else {
    int cnt = 0;
    HT_CHECK_NCCL(ncclCommCount(odd, &cnt));
    std::vector<int> w(10, 1), wo(10);
    HT_CHECK_NCCL(ncclAllReduce(w.data(), wo.data(), 10, ncclInt32, ncclSum, odd, s));
    ok = SyncAndState(odd, s) == ncclSuccess && AllEqual(wo, n - 1);
    report.Check(cnt == n - 1 && ok, "split_without_rank0", "wrong size or result");
    HT_CHECK_NCCL(ncclCommDestroy(odd));
  }
  std::printf("rank %d of %d: %d cases passed, %d failed\n", r, n, report.passed(), report.failed());
  HT_CHECK_NCCL(ncclCommDestroy(child));
  HT_CHECK_NCCL(ncclCommDestroy(parent));
  HT_CHECK_NCCL(hostcclStreamDestroy(s));
  return report.failed() == 0 ? 0 : 1;
}

int Nonblocking(const RankContext& x) {
  const int n = x.nranks, r = x.rank;
  Report report;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t rc = ncclCommInitRankConfig(&comm, n, x.id, r, &config);
  report.Check(rc == ncclInProgress && comm != nullptr, "nonblocking_init_in_progress",
               std::string("ncclCommInitRankConfig returned ") + ncclGetErrorString(rc));
  ncclResult_t state = ncclInProgress;
  bool saw_in_progress = false;
  while (state == ncclInProgress) {
    HT_CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
    saw_in_progress = saw_in_progress || state == ncclInProgress;
    std::this_thread::yield();
  }
  report.Check(state == ncclSuccess, "nonblocking_init_completes", ncclGetErrorString(state));
  (void)saw_in_progress;  // depends on timing; the return code above is the contract
  cudaStream_t s;
  HT_CHECK_NCCL(hostcclStreamCreate(&s));
  std::vector<float> v(100000, 1.0f), o(100000);
  HT_CHECK_NCCL(ncclAllReduce(v.data(), o.data(), v.size(), ncclFloat, ncclSum, comm, s));
  HT_CHECK_NCCL(hostcclStreamSynchronize(s));
  bool ok = true;
  for (float f : o) ok = ok && f == static_cast<float>(n);
  report.Check(ok, "nonblocking_allreduce", "wrong result");
  rc = ncclCommFinalize(comm);
  report.Check(rc == ncclInProgress || rc == ncclSuccess, "nonblocking_finalize", ncclGetErrorString(rc));
  do {
    HT_CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
  } while (state == ncclInProgress);
  report.Check(state == ncclSuccess, "nonblocking_finalize_completes", ncclGetErrorString(state));
  HT_CHECK_NCCL(ncclCommDestroy(comm));
  HT_CHECK_NCCL(hostcclStreamDestroy(s));
  std::printf("rank %d of %d: %d cases passed, %d failed\n", r, n, report.passed(), report.failed());
  return report.failed() == 0 ? 0 : 1;
}

// The last rank kills itself after one good AllReduce; the others must see
// ncclRemoteError (or ncclSystemError) instead of hanging.
int Kill(const RankContext& x) {
  const int n = x.nranks, r = x.rank;
  ncclComm_t comm;
  HT_CHECK_NCCL(ncclCommInitRank(&comm, n, x.id, r));
  cudaStream_t s;
  HT_CHECK_NCCL(hostcclStreamCreate(&s));
  std::vector<float> v(1 << 20, 1.0f), o(1 << 20);
  HT_CHECK_NCCL(ncclAllReduce(v.data(), o.data(), v.size(), ncclFloat, ncclSum, comm, s));
  if (SyncAndState(comm, s) != ncclSuccess || o[0] != static_cast<float>(n)) {
    std::printf("FAIL first AllReduce\n");
    return 1;
  }
  if (r == n - 1) raise(SIGKILL);
  auto t0 = std::chrono::steady_clock::now();
  ncclResult_t rc = ncclAllReduce(v.data(), o.data(), v.size(), ncclFloat, ncclSum, comm, s);
  ncclResult_t state = rc == ncclSuccess ? SyncAndState(comm, s) : rc;
  double ms = MsSince(t0);
  Report report;
  report.Check(state == ncclRemoteError || state == ncclSystemError, "killed_peer_detected",
               std::string("state after the peer died: ") + ncclGetErrorString(state));
  // The comm's last error is what failed on its executor, not NCCL's generic text.
  const std::string why = ncclGetLastError(comm);
  report.Check(!why.empty() && why != ncclGetErrorString(state), "last_error_names_the_cause",
               "ncclGetLastError(comm) = \"" + why + "\"");
  std::printf("rank %d: last error: %s\n", r, why.c_str());
  ncclResult_t later = ncclAllReduce(v.data(), o.data(), v.size(), ncclFloat, ncclSum, comm, s);
  report.Check(later != ncclSuccess, "later_call_fails", "a call after the failure returned ncclSuccess");
  std::printf("rank %d: peer death detected after %.1f ms (%s)\n", r, ms, ncclGetErrorString(state));
  HT_CHECK_NCCL(ncclCommAbort(comm));
  HT_CHECK_NCCL(hostcclStreamDestroy(s));
  std::printf("rank %d of %d: %d cases passed, %d failed\n", r, n, report.passed(), report.failed());
  return report.failed() == 0 ? 0 : 1;
}

// Started with fewer ranks than nranks: init must fail, not hang.
int MissingRank(const RankContext& x) {
  ncclComm_t comm = nullptr;
  ncclResult_t rc = ncclCommInitRank(&comm, x.nranks, x.id, x.rank);
  std::printf("rank %d: ncclCommInitRank -> %s; last error: %s\n", x.rank, ncclGetErrorString(rc),
              ncclGetLastError(nullptr));
  bool named = std::string(ncclGetLastError(nullptr)).find("missing ranks") != std::string::npos;
  if (rc == ncclSuccess || comm != nullptr || !named) {
    std::printf("FAIL missing rank not reported\n");
    return 1;
  }
  return 0;
}

int RunRank(const RankContext& x, const std::string& scenario) {
  if (scenario == "sweep") return RunSweep(x);
  if (scenario == "groups") return Groups(x);
  if (scenario == "split") return Split(x);
  if (scenario == "nonblocking") return Nonblocking(x);
  if (scenario == "kill") return Kill(x);
  if (scenario == "missing_rank") return MissingRank(x);
  std::printf("FAIL unknown scenario %s\n", scenario.c_str());
  return 2;
}

int Launch(int nranks, const std::string& scenario, const std::string& arg, int start, int victim) {
  ncclUniqueId id;
  HT_CHECK_NCCL(ncclGetUniqueId(&id));
  std::string hex = trirace::UniqueIdToHex(id), n = std::to_string(nranks);
  testing_support::ChildGroup ranks(150 * 1000);
  for (int r = 0; r < start; ++r) {
    ranks.Start({"/proc/self/exe", "rank", std::to_string(r), n, hex, scenario, arg});
  }
  const std::vector<testing_support::ProcessResult> results = ranks.Wait();
  int bad = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const testing_support::ProcessResult& r = results[i];
    std::fputs(r.out.c_str(), stdout);
    std::fputs(r.err.c_str(), stderr);
    if (r.timed_out) {
      std::printf("FAIL rank %zu still running after 150 s: killed\n", i);
      ++bad;
      continue;
    }
    const bool ok = static_cast<int>(i) == victim ? r.exit_code == 128 + SIGKILL : r.exit_code == 0;
    if (!ok) {
      ++bad;
      std::printf("rank %zu: unexpected %s %d\n", i, r.exit_code > 128 ? "signal" : "exit code",
                  r.exit_code > 128 ? r.exit_code - 128 : r.exit_code);
    }
  }
  std::printf("launch %s with %d of %d ranks: %s\n", scenario.c_str(), start, nranks, bad == 0 ? "PASSED" : "FAILED");
  return bad == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hostccl_test

int main(int argc, char** argv) {
  using namespace hostccl_test;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 3 && a[0] == "launch") {
    int nranks = std::atoi(a[1].c_str());
    std::string scenario = a[2], arg;
    int start = nranks, victim = -1;
    for (size_t i = 3; i < a.size(); ++i) {
      if (a[i] == "--start" && i + 1 < a.size()) start = std::atoi(a[++i].c_str());
      else if (a[i] == "--victim" && i + 1 < a.size()) victim = std::atoi(a[++i].c_str());
      else arg = a[i];
    }
    return Launch(nranks, scenario, arg, start, victim);
  }
  if (a.size() >= 5 && a[0] == "rank") {
    RankContext x;
    x.rank = std::atoi(a[1].c_str());
    x.nranks = std::atoi(a[2].c_str());
    if (!trirace::UniqueIdFromHex(a[3], &x.id)) {
      std::fprintf(stderr, "rank: bad unique id '%s'\n", a[3].c_str());
      return 2;
    }
    x.arg = a.size() > 5 ? a[5] : "";
    // HOSTCCL_TEST_EAGER_RANK=R: rank R alone turns the receiver-ready
    // handshake off (set before its first communicator reads the setting).
    if (const char* eager = std::getenv("HOSTCCL_TEST_EAGER_RANK"); eager != nullptr && std::atoi(eager) == x.rank) {
      setenv("TRIRACE_HOSTCCL_RECEIVER_READY", "0", 1);
    }
    return RunRank(x, a[4]);
  }
  std::fprintf(stderr, "usage: %s launch <nranks> <scenario> [arg] [--start K] [--victim R]\n", argv[0]);
  return 2;
}
