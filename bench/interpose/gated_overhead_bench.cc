// Added host cost per op of schedule mode (gated launch) over observe mode,
// measured side by side in one process over hostccl, and the background
// CPU the gated launch adds per 1000 ops/s.
//
//   observe           TRIRACE_MODE=observe: the op goes to the user stream
//   schedule_fifo     TRIRACE_MODE=schedule, policy fifo: events, a gate, the
//                     real call on the comm's dedicated stream, a completion
//                     callback, engine Submit (released at once)
//   schedule_trirace  the same with the trirace policy
//
// Each mode is its own copy of libtrirace.so (the mode is read once per
// process), loaded next to one hostccl; each has a one-rank comm and a host
// stream. An op is a one-element int32 AllReduce; every 64 ops the timer is
// paused and the stream drained, so queues stay short. The figure to read is
// the median per op of a schedule column minus that of observe (the calling
// thread's cost; the stream work runs on hostccl's worker threads).
//
// Two more columns call hostccl directly, without the shim, to show what
// its stream operations cost by themselves:
//   streams_observe   the op on the user stream, an event recorded after it,
//                     a watcher stream waiting for it and running a host
//                     callback (what observe mode enqueues)
//   streams_gated     E_in record/wait, the op on a second stream, the same
//                     watch of that stream, E_done record/wait (what a gated
//                     op released at once enqueues)
//   streams_host_func_on_stream  the op and a host callback on the user
//                     stream itself (what observe mode enqueued before the
//                     watcher: the host cost the watcher trades for not
//                     holding the stream)
// so schedule - observe - (streams_gated - streams_observe) is the shim's
// own logic (engine Submit, tickets, locks).
//
// After the benchmarks, each mode issues 1000 ops/s (3 rounds of 2 s) and the program
// prints the CPU time of every thread but the caller (engine, watchdog,
// stream workers) per second: the schedule figure minus observe is the
// background cost of gating at 1000 ops/s.
//
//   gated_overhead_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "nccl.h"
#include "shim_copy.h"

namespace {

using trirace_bench::LoadShimCopy;
using trirace_bench::Sym;

using StreamCreateFn = ncclResult_t (*)(cudaStream_t*);
using StreamSyncFn = ncclResult_t (*)(cudaStream_t);

struct Api {
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

Api g_observe, g_fifo, g_trirace;
StreamSyncFn g_sync = nullptr;

// hostccl called directly.
struct Direct {
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  ncclResult_t (*event_create)(cudaEvent_t*) = nullptr;
  ncclResult_t (*event_record)(cudaEvent_t, cudaStream_t) = nullptr;
  ncclResult_t (*wait_event)(cudaStream_t, cudaEvent_t) = nullptr;
  ncclResult_t (*host_func)(cudaStream_t, void (*)(void*), void*) = nullptr;
  ncclComm_t comm = nullptr;
  cudaStream_t user = nullptr;
  cudaStream_t dedicated = nullptr;
  cudaStream_t watcher = nullptr;
  cudaEvent_t in = nullptr;
  cudaEvent_t done = nullptr;
  cudaEvent_t watched = nullptr;
};
Direct g_direct;
std::string g_dir;

Api LoadShim(const char* mode, const char* policy, StreamCreateFn create) {
  void* h = LoadShimCopy(SHIM_PATH, g_dir, std::string(mode) + "-" + policy,
                         {{"TRIRACE_MODE", mode}, {"TRIRACE_POLICY", policy}, {"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY}});
  Api api;
  api.all_reduce = Sym<decltype(&::ncclAllReduce)>(h, "ncclAllReduce");
  auto get_id = Sym<decltype(&::ncclGetUniqueId)>(h, "ncclGetUniqueId");
  auto init = Sym<decltype(&::ncclCommInitRank)>(h, "ncclCommInitRank");
  ncclUniqueId id;
  if (get_id(&id) != ncclSuccess || init(&api.comm, 1, id, 0) != ncclSuccess || create(&api.stream) != ncclSuccess) {
    std::fprintf(stderr, "gated_overhead_bench: cannot create a one-rank comm on hostccl (%s)\n", mode);
    std::exit(1);
  }
  return api;
}

void Setup() {
  char tmpl[] = "/tmp/trirace-gated-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::exit(1);
  g_dir = tmpl;
  void* hostccl = dlopen(HOSTCCL_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
  if (hostccl == nullptr) {
    std::fprintf(stderr, "gated_overhead_bench: cannot load hostccl %s: %s\n", HOSTCCL_LIBRARY, dlerror());
    std::exit(1);
  }
  auto create = Sym<StreamCreateFn>(hostccl, "hostcclStreamCreate");
  g_sync = Sym<StreamSyncFn>(hostccl, "hostcclStreamSynchronize");
  g_direct.all_reduce = Sym<decltype(&::ncclAllReduce)>(hostccl, "pncclAllReduce");
  g_direct.event_create = Sym<decltype(g_direct.event_create)>(hostccl, "hostcclEventCreate");
  g_direct.event_record = Sym<decltype(g_direct.event_record)>(hostccl, "hostcclEventRecord");
  g_direct.wait_event = Sym<decltype(g_direct.wait_event)>(hostccl, "hostcclStreamWaitEvent");
  g_direct.host_func = Sym<decltype(g_direct.host_func)>(hostccl, "hostcclLaunchHostFunc");
  {
    auto get_id = Sym<decltype(&::ncclGetUniqueId)>(hostccl, "pncclGetUniqueId");
    auto init = Sym<decltype(&::ncclCommInitRank)>(hostccl, "pncclCommInitRank");
    ncclUniqueId id;
    if (get_id(&id) != ncclSuccess || init(&g_direct.comm, 1, id, 0) != ncclSuccess ||
        create(&g_direct.user) != ncclSuccess || create(&g_direct.dedicated) != ncclSuccess ||
        create(&g_direct.watcher) != ncclSuccess || g_direct.event_create(&g_direct.in) != ncclSuccess ||
        g_direct.event_create(&g_direct.done) != ncclSuccess ||
        g_direct.event_create(&g_direct.watched) != ncclSuccess) {
      std::fprintf(stderr, "gated_overhead_bench: cannot set up hostccl directly\n");
      std::exit(1);
    }
  }
  g_observe = LoadShim("observe", "fifo", create);
  g_fifo = LoadShim("schedule", "fifo", create);
  g_trirace = LoadShim("schedule", "trirace", create);
}

void AllReduce(benchmark::State& state, const Api* api) {
  int32_t x = 1, y = 0;
  int n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(api->all_reduce(&x, &y, 1, ncclInt32, ncclSum, api->comm, api->stream));
    if (++n % 64 == 0) {
      state.PauseTiming();
      g_sync(api->stream);
      state.ResumeTiming();
    }
  }
  g_sync(api->stream);
}

void Noop(void*) {}

// The shim's completion watch (interpose/stream_watcher.h) of `stream`.
void Watch(const Direct& d, cudaStream_t stream) {
  d.event_record(d.watched, stream);
  d.wait_event(d.watcher, d.watched);
  d.host_func(d.watcher, &Noop, nullptr);
}

enum class Sequence { kObserve, kGated, kHostFuncOnStream };

void StreamOps(benchmark::State& state, Sequence seq) {
  const Direct& d = g_direct;
  int32_t x = 1, y = 0;
  int n = 0;
  for (auto _ : state) {
    if (seq == Sequence::kGated) {
      d.event_record(d.in, d.user);
      d.wait_event(d.dedicated, d.in);
      d.all_reduce(&x, &y, 1, ncclInt32, ncclSum, d.comm, d.dedicated);
      Watch(d, d.dedicated);
      d.event_record(d.done, d.dedicated);
      d.wait_event(d.user, d.done);
    } else if (seq == Sequence::kObserve) {
      d.all_reduce(&x, &y, 1, ncclInt32, ncclSum, d.comm, d.user);
      Watch(d, d.user);
    } else {
      d.all_reduce(&x, &y, 1, ncclInt32, ncclSum, d.comm, d.user);
      d.host_func(d.user, &Noop, nullptr);
    }
    if (++n % 64 == 0) {
      state.PauseTiming();
      g_sync(d.user);
      g_sync(d.watcher);
      state.ResumeTiming();
    }
  }
  g_sync(d.user);
  g_sync(d.watcher);
}

BENCHMARK_CAPTURE(StreamOps, streams_observe, Sequence::kObserve);
BENCHMARK_CAPTURE(StreamOps, streams_gated, Sequence::kGated);
BENCHMARK_CAPTURE(StreamOps, streams_host_func_on_stream, Sequence::kHostFuncOnStream);
BENCHMARK_CAPTURE(AllReduce, observe, &g_observe);
BENCHMARK_CAPTURE(AllReduce, schedule_fifo, &g_fifo);
BENCHMARK_CAPTURE(AllReduce, schedule_trirace, &g_trirace);

int64_t CpuNs(int who) {
  rusage u{};
  getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000'000LL +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000LL;
}

// CPU ms per second of every thread but the caller while `api` issues
// `rate` ops/s for `seconds`.
double BackgroundCpu(const Api& api, int rate, double seconds) {
  int32_t x = 1, y = 0;
  const auto period = std::chrono::nanoseconds(1'000'000'000LL / rate);
  const int total = static_cast<int>(rate * seconds);
  const int64_t p0 = CpuNs(RUSAGE_SELF), t0 = CpuNs(RUSAGE_THREAD);
  auto next = std::chrono::steady_clock::now();
  for (int i = 0; i < total; ++i) {
    api.all_reduce(&x, &y, 1, ncclInt32, ncclSum, api.comm, api.stream);
    next += period;
    std::this_thread::sleep_until(next);
  }
  g_sync(api.stream);
  const int64_t background = (CpuNs(RUSAGE_SELF) - p0) - (CpuNs(RUSAGE_THREAD) - t0);
  return background / 1e6 / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  Setup();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Three alternating rounds of 2 s per mode; medians.
  std::vector<double> observe, fifo, trirace;
  for (int round = 0; round < 3; ++round) {
    observe.push_back(BackgroundCpu(g_observe, 1000, 2.0));
    fifo.push_back(BackgroundCpu(g_fifo, 1000, 2.0));
    trirace.push_back(BackgroundCpu(g_trirace, 1000, 2.0));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double o = median(observe), f = median(fifo), t = median(trirace);
  std::printf("background CPU at 1000 ops/s (ms per s, all threads but the caller; median of 3 rounds of 2 s): "
              "observe %.2f, schedule_fifo %.2f, schedule_trirace %.2f; added by gating: fifo %.2f, trirace %.2f\n",
              o, f, t, f - o, t - o);
  std::filesystem::remove_all(g_dir);
  return 0;
}
