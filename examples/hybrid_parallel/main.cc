// hybrid_parallel: a pipeline x data parallel training loop on NCCL with
// emulated compute (see docs/examples.md).
//
// Exit codes: 0 done; 1 a run-time error (NCCL, streams, rendezvous);
// 2 bad flags; 3 no host-stream API in the loaded libnccl.so.2 (the real
// NCCL); 124 the --timeout watchdog fired.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <nccl.h>

#include "config.h"
#include "data_model.h"
#include "device.h"
#include "median.h"
#include "model.h"
#include "reference.h"
#include "rendezvous.h"
#include "trainer.h"
#include "nlohmann/json.hpp"
#include "trirace/trirace.h"

namespace hybrid {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;
constexpr int kExitTimeout = 124;

// Ends the process if the run takes longer than the limit: a hung peer must
// not hang the job forever.
class Watchdog {
 public:
  Watchdog(int seconds, int rank) : thread_([this, seconds, rank] {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
      std::fprintf(stderr, "hybrid_parallel: rank %d: still running after --timeout %d s: exiting\n",
                   rank, seconds);
      std::fflush(stderr);
      std::_Exit(kExitTimeout);
    }
  }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

// Six significant digits, as the RESULT line had them before it was built
// with nlohmann-json (which writes the shortest text of the value).
double Sig6(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return std::strtod(buf, nullptr);
}

// CPU time (user + system, every thread) this process has used, seconds.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What the training loop cost the CPUs: this rank's CPU time and wall time
// over RunTraining (warm-up included).
struct CpuUse {
  double cpu_s = 0;
  double wall_s = 0;
};

// Gathers every rank's hash and the slowest rank's time per iteration; rank
// 0 prints the RESULT line.
void Report(const Config& c, const Device& dev, ncclComm_t world, const RunResult& r,
            const CpuUse& use) {
  std::vector<uint64_t> hashes(size_t(c.nranks));
  std::vector<double> ms = r.iteration_ms;
  uint64_t mine = r.rank_hash;
  double cpu_s = use.cpu_s, wall_s = use.wall_s;
  Stream s(dev);
  CheckNccl(ncclAllGather(&mine, hashes.data(), 1, ncclUint64, world, s.get()), "ncclAllGather");
  CheckNccl(ncclAllReduce(ms.data(), ms.data(), ms.size(), ncclFloat64, ncclMax, world, s.get()),
            "ncclAllReduce");
  CheckNccl(ncclAllReduce(&cpu_s, &cpu_s, 1, ncclFloat64, ncclSum, world, s.get()), "ncclAllReduce");
  CheckNccl(ncclAllReduce(&wall_s, &wall_s, 1, ncclFloat64, ncclMax, world, s.get()),
            "ncclAllReduce");
  dev.Synchronize(s.get());
  if (c.rank != 0) return;

  std::vector<uint64_t> by_place;  // (stage, replica) order
  for (int st = 0; st < c.total_stages(); ++st) {
    for (int d = 0; d < c.replicas; ++d) by_place.push_back(hashes[size_t(RankOf(c, st, d))]);
  }
  const std::vector<double> timed(ms.begin() + c.warmup, ms.end());
  double sum = 0;
  for (double v : timed) sum += v;
  Traffic total;
  for (int st = 0; st < c.total_stages(); ++st) {
    Traffic t = TrafficPerIteration(c, st);
    total.p2p += t.p2p * c.replicas;
    total.dense += t.dense * c.replicas;
    total.sparse += t.sparse * c.replicas;
  }

  // ranks_cpu_pct: the share of this machine's cores the ranks used
  // together while training; near 100 means the CPUs, not the links, set the
  // pace (all ranks of a test bed share one machine).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  nlohmann::ordered_json rank_checksums = nlohmann::ordered_json::array();
  for (uint64_t h : by_place) rank_checksums.push_back(Hex(h));
  std::vector<double> iteration_ms;
  for (double v : ms) iteration_ms.push_back(Sig6(v));
  const nlohmann::ordered_json result = {
      {"example", "hybrid_parallel"},
      {"ranks", c.nranks},
      {"median_ms", Sig6(Median(timed))},
      {"mean_ms", Sig6(sum / double(timed.size()))},
      {"min_ms", Sig6(*std::min_element(timed.begin(), timed.end()))},
      {"max_ms", Sig6(*std::max_element(timed.begin(), timed.end()))},
      {"iterations", timed.size()},
      {"warmup", c.warmup},
      {"iteration_ms", iteration_ms},
      {"checksum", Hex(data::JobChecksum(by_place))},
      {"rank_checksums", rank_checksums},
      {"bytes_per_iteration", {{"p2p", total.p2p}, {"dense", total.dense}, {"sparse", total.sparse}}},
      {"trirace", {{"shim", trirace_api_version() > 0}, {"scheduling", trirace_scheduler_active() != 0}}},
      {"cpu",
       {{"ranks_cpu_s", Sig6(cpu_s)},
        {"wall_s", Sig6(wall_s)},
        {"cores", cores},
        {"ranks_cpu_pct", Sig6(wall_s > 0 ? 100.0 * cpu_s / (wall_s * cores) : 0.0)}}},
      {"config", ConfigJson(c)}};
  std::printf("RESULT %s\n", result.dump().c_str());
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  Config c;
  std::string error;
  if (!ParseArgs(argc, argv, &c, &error)) {
    std::fprintf(stderr, "hybrid_parallel: %s\n", error.c_str());
    return kExitUsage;
  }
  if (c.help) {
    std::printf("%s", Usage().c_str());
    return 0;
  }
  if (c.reference_only) {
    if (!ValidateModel(c, &error)) {
      std::fprintf(stderr, "hybrid_parallel: %s\n", error.c_str());
      return kExitUsage;
    }
    const nlohmann::ordered_json reference = {{"checksum", Hex(ComputeExpected(c).checksum)},
                                              {"config", ConfigJson(c)}};
    std::printf("REFERENCE %s\n", reference.dump().c_str());
    return 0;
  }
  if (!ValidateRun(c, &error)) {
    std::fprintf(stderr, "hybrid_parallel: %s\n", error.c_str());
    return kExitUsage;
  }
  Watchdog watchdog(c.timeout_s, c.rank);
  Device dev;
  if (!dev.Load(&error)) {
    std::fprintf(stderr, "hybrid_parallel: rank %d: %s\n", c.rank, error.c_str());
    return kExitNoDevice;
  }
  try {
    ncclUniqueId id = ShareUniqueId(c.rank, c.uid_file, c.timeout_s);
    ncclComm_t world = nullptr;
    CheckNccl(ncclCommInitRank(&world, c.nranks, id, c.rank), "ncclCommInitRank");
    CpuUse use{ProcessCpuSeconds(), WallSeconds()};
    RunResult r = RunTraining(c, dev, world);
    use = {ProcessCpuSeconds() - use.cpu_s, WallSeconds() - use.wall_s};
    Report(c, dev, world, r, use);
    CheckNccl(ncclCommDestroy(world), "ncclCommDestroy");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hybrid_parallel: rank %d: %s\n", c.rank, e.what());
    std::fflush(stderr);
    // Other threads may still use what is being torn down: leave at once.
    std::_Exit(kExitError);
  }
  return 0;
}

}  // namespace
}  // namespace hybrid

int main(int argc, char** argv) { return hybrid::Main(argc, argv); }
