// hostccl_busbw: bus bandwidth of hostccl's AllReduce and AllGather (the
// nccl-tests definitions: algbw = S / t; busbw = algbw * 2(n-1)/n for
// AllReduce and * (n-1)/n for AllGather, S = the buffer size) for
// 1 MiB .. 256 MiB at 2 and 4 ranks, printed next to the raw point-to-point
// throughput of the net plugin measured first in the same run (two ranks,
// one direction, messages of TRIRACE_HOSTCCL_SLICE_BYTES, the same depth
// the collectives use). Ranks are processes on this host, so the
// collectives move their bytes through shared memory unless
// TRIRACE_HOSTCCL_SHM=0 (then through the plugin, over loopback). Times
// are the best of several runs (each collective timed with a barrier after
// it), since the host is usually shared.
//
//   hostccl_busbw [--max-mib 256] [--ranks 2,4]   (CLI11; --help lists the flags)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <string>
#include <vector>

#include <hostccl/stream.h>
#include <nccl.h>

#include "CLI/CLI.hpp"
#include "bench/hostccl/rank_processes.h"
#include "common/clock.h"
#include "common/params.h"
#include "hostccl/src/bootstrap.h"
#include "hostccl/src/net_plugin.h"
#include "hostccl/src/net_peer_links.h"
#include "nccl_adapter/unique_id_text.h"

namespace {

using trirace::hostccl::NetPlugin;
using trirace::hostccl::NetPeerLinks;
using hostccl_bench::FromHex;
using hostccl_bench::Spawn;

double Now() { return trirace::MonotonicNs() * 1e-9; }

// Raw plugin throughput, rank 0 -> rank 1; rank 1 writes GB/s to `out`.
int P2pRank(int rank, const ncclUniqueId& id, const std::string& out) {
  auto plugin = NetPlugin::Get();
  if (!plugin.ok()) return std::fprintf(stderr, "%s\n", std::string(plugin.status().message()).c_str()), 1;
  auto t = NetPeerLinks::Create(*plugin, rank, 2, trirace::hostccl::UniqueIdHash(id), -1);
  if (!t.ok()) return 1;
  auto all = trirace::hostccl::Rendezvous(id, rank, 2, (*t)->ListenHandles(), nullptr);
  std::atomic<bool> abort{false};
  if (!all.ok() || !(*t)->ConnectAll(*all, trirace::MonotonicNs() + 30'000'000'000, abort).ok()) return 1;
  const size_t msg = std::min<size_t>(trirace::ParamInt(trirace::ParamId::kHostcclSliceBytes), (*t)->MaxMessageBytes());
  const int depth = static_cast<int>(trirace::ParamInt(trirace::ParamId::kHostcclPipelineDepth));
  const size_t total = size_t{256} << 20;
  std::vector<char> buf(msg * depth, 1);
  auto region = (*t)->Register(buf.data(), buf.size());
  if (!region.ok()) return 1;
  double best = 1e30;
  for (int run = 0; run < 4; ++run) {  // best of 4: the host is shared
    std::deque<void*> posted;
    size_t issued = 0, done = 0;
    double t0 = Now();
    while (done < total) {
      while (issued < total && static_cast<int>(posted.size()) < depth) {
        char* p = buf.data() + (issued / msg % depth) * msg;
        auto req = rank == 0 ? (*t)->Isend(1, p, msg, **region) : (*t)->Irecv(0, p, msg, **region);
        if (!req.ok()) return 1;
        if (*req == nullptr) break;
        posted.push_back(*req);
        issued += msg;
      }
      size_t got = 0;
      auto ok = (*t)->Test(posted.front(), &got);
      if (!ok.ok()) return 1;
      if (*ok) {
        posted.pop_front();
        done += msg;
      }
    }
    best = std::min(best, Now() - t0);
  }
  double gbps = total / best / 1e9;
  if (rank == 1) std::ofstream(out) << gbps << "\n";
  region->reset();
  return 0;
}

int CollRank(int rank, int n, const ncclUniqueId& id, size_t max_bytes, double p2p) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1;
  cudaStream_t s;
  hostcclStreamCreate(&s);
  std::vector<char> send(max_bytes), recv(max_bytes);
  float one = 1, sum = 0;
  auto barrier = [&] {
    ncclAllReduce(&one, &sum, 1, ncclFloat, ncclSum, comm, s);
    hostcclStreamSynchronize(s);
  };
  if (rank == 0) {
    std::printf("\n%d ranks (p2p %.2f GB/s)\n%10s %14s %10s %10s %8s %14s %10s %10s %8s\n", n, p2p, "size",
                "AllReduce us", "algbw", "busbw", "/p2p", "AllGather us", "algbw", "busbw", "/p2p");
  }
  for (size_t bytes = size_t{1} << 20; bytes <= max_bytes; bytes *= 4) {
    int iters = static_cast<int>(std::max<size_t>(2, std::min<size_t>(20, (size_t{512} << 20) / bytes)));
    double us[2];
    for (int k = 0; k < 2; ++k) {
      auto run = [&] {
        if (k == 0) ncclAllReduce(send.data(), recv.data(), bytes / 4, ncclFloat, ncclSum, comm, s);
        else ncclAllGather(send.data(), recv.data(), bytes / 4 / n, ncclFloat, comm, s);
      };
      run();
      barrier();
      double best = 1e30;  // best of `iters`: the host is shared
      for (int i = 0; i < iters; ++i) {
        double t0 = Now();
        run();
        barrier();
        best = std::min(best, Now() - t0);
      }
      us[k] = best * 1e6;
    }
    ncclResult_t async;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess) return 1;
    if (rank == 0) {
      double alg_ar = bytes / us[0] / 1e3, alg_ag = bytes / us[1] / 1e3;  // GB/s
      double bus_ar = alg_ar * 2 * (n - 1) / n, bus_ag = alg_ag * (n - 1) / n;
      std::printf("%7zu MiB %14.0f %10.2f %10.2f %8.2f %14.0f %10.2f %10.2f %8.2f\n", bytes >> 20, us[0], alg_ar,
                  bus_ar, bus_ar / p2p, us[1], alg_ag, bus_ag, bus_ag / p2p);
    }
  }
  hostcclStreamDestroy(s);
  ncclCommDestroy(comm);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app("Bus bandwidth of hostccl's AllReduce and AllGather (nccl-tests' definitions) from 1 MiB up,\n"
               "next to the net plugin's point-to-point throughput measured first in the same run. Ranks\n"
               "are processes on this host (loopback); times are the best of several runs.",
               "hostccl_busbw");
  size_t max_mib = 256;
  std::vector<int> counts = {2, 4};
  app.add_option("--max-mib", max_mib, "the largest buffer, MiB (1 MiB, then x4 per step)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--ranks", counts, "rank counts, one table each")
      ->delimiter(',')
      ->type_name("N,N...")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  // The ranks this program starts as processes of itself: subcommands left
  // out of --help, their values positional.
  struct {
    int rank = 0, nranks = 0;
    std::string id_hex, out;
    size_t max_bytes = 0;
    double p2p = 0;  // GB/s
  } child;
  CLI::App* p2p_rank = app.add_subcommand("p2p", "")->group("");
  p2p_rank->add_option("rank", child.rank)->required();
  p2p_rank->add_option("id", child.id_hex)->required();
  p2p_rank->add_option("out", child.out)->required();
  CLI::App* coll_rank = app.add_subcommand("coll", "")->group("");
  coll_rank->add_option("rank", child.rank)->required();
  coll_rank->add_option("nranks", child.nranks)->required();
  coll_rank->add_option("id", child.id_hex)->required();
  coll_rank->add_option("max_bytes", child.max_bytes)->required();
  coll_rank->add_option("p2p", child.p2p)->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // CLI11 prints the help or the error
  }
  if (p2p_rank->parsed()) return P2pRank(child.rank, FromHex(child.id_hex), child.out);
  if (coll_rank->parsed()) {
    return CollRank(child.rank, child.nranks, FromHex(child.id_hex), child.max_bytes, child.p2p);
  }

  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  const char* tmp = std::getenv("TMPDIR");
  std::string hex = trirace::UniqueIdToHex(id);
  std::string file = std::string(tmp != nullptr ? tmp : "/tmp") + "/hostccl_busbw." + std::to_string(getpid());
  if (Spawn({{"x", "p2p", "0", hex, file}, {"x", "p2p", "1", hex, file}}) != 0) return 1;
  double p2p = 0;
  std::ifstream(file) >> p2p;
  std::remove(file.c_str());
  std::printf("net plugin point-to-point (256 MiB, best of 4, one direction, 2 processes): %.2f GB/s (%.1f Gbit/s)\n", p2p, p2p * 8);
  for (int n : counts) {
    if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
    hex = trirace::UniqueIdToHex(id);
    std::vector<std::vector<std::string>> ranks;
    for (int r = 0; r < n; ++r) {
      ranks.push_back({"x", "coll", std::to_string(r), std::to_string(n), hex, std::to_string(max_mib << 20),
                       std::to_string(p2p)});
    }
    if (Spawn(ranks) != 0) return 1;
  }
  return 0;
}
