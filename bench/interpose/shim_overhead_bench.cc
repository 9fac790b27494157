// Added cost per NCCL call of libtrirace.so, measured side by side in one
// process against a minimal stand-in libnccl.so.2:
//
//   direct        the stand-in's pncclX called through a function pointer
//   off           the shim's ncclX with TRIRACE_MODE=off (a branch, then forward)
//   observe       TRIRACE_MODE=observe: registry lookup, tag, stats
//   observe_trace observe plus a trace record (TRIRACE_TRACE=/dev/null)
//
// Each mode is its own copy of libtrirace.so (a mode is read once per
// process at the shim's first call, and copies do not share state), loaded
// next to one shared stand-in. The figure to read is the median per call of
// a mode minus that of `direct`. Run:
//   shim_overhead_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "benchmark/benchmark.h"
#include "nccl.h"
#include "shim_copy.h"

namespace {

using trirace_bench::LoadShimCopy;
using trirace_bench::Sym;

struct Api {
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclCommCount) comm_count = nullptr;
  ncclComm_t comm = nullptr;
};

Api g_direct, g_off, g_observe, g_trace;
std::string g_dir;

ncclComm_t MakeComm(void* handle, const char* prefix) {
  const std::string p(prefix);
  auto get_id = Sym<decltype(&::ncclGetUniqueId)>(handle, (p + "GetUniqueId").c_str());
  auto init = Sym<decltype(&::ncclCommInitRank)>(handle, (p + "CommInitRank").c_str());
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (get_id(&id) != ncclSuccess || init(&comm, 1, id, 0) != ncclSuccess) {
    std::fprintf(stderr, "shim_overhead_bench: cannot create a comm through %s\n", prefix);
    std::exit(1);
  }
  return comm;
}

// Loads a private copy of the shim configured for `mode`.
Api LoadShim(const char* mode, const char* trace) {
  void* h = LoadShimCopy(SHIM_PATH, g_dir, std::string(mode) + (trace[0] != '\0' ? "-trace" : ""),
                         {{"TRIRACE_MODE", mode}, {"TRIRACE_TRACE", trace}, {"TRIRACE_NCCL_LIBRARY", STANDIN_PATH}});
  Api api;
  api.all_reduce = Sym<decltype(&::ncclAllReduce)>(h, "ncclAllReduce");
  api.comm_count = Sym<decltype(&::ncclCommCount)>(h, "ncclCommCount");
  api.comm = MakeComm(h, "nccl");  // the shim reads its configuration here
  return api;
}

void Setup() {
  char tmpl[] = "/tmp/trirace-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::exit(1);
  g_dir = tmpl;
  void* standin = dlopen(STANDIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (standin == nullptr) std::exit(1);
  g_direct.all_reduce = Sym<decltype(&::ncclAllReduce)>(standin, "pncclAllReduce");
  g_direct.comm_count = Sym<decltype(&::ncclCommCount)>(standin, "pncclCommCount");
  g_direct.comm = MakeComm(standin, "pnccl");
  g_off = LoadShim("off", "");
  g_observe = LoadShim("observe", "");
  g_trace = LoadShim("observe", "/dev/null");
}

void AllReduce(benchmark::State& state, const Api* api) {
  int32_t x = 1, y = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(api->all_reduce(&x, &y, 1, ncclInt32, ncclSum, api->comm, nullptr));
  }
}

void CommCount(benchmark::State& state, const Api* api) {
  int n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(api->comm_count(api->comm, &n));
}

BENCHMARK_CAPTURE(AllReduce, direct, &g_direct);
BENCHMARK_CAPTURE(AllReduce, off, &g_off);
BENCHMARK_CAPTURE(AllReduce, observe, &g_observe);
BENCHMARK_CAPTURE(AllReduce, observe_trace, &g_trace);
BENCHMARK_CAPTURE(CommCount, direct, &g_direct);
BENCHMARK_CAPTURE(CommCount, off, &g_off);
BENCHMARK_CAPTURE(CommCount, observe, &g_observe);

}  // namespace

int main(int argc, char** argv) {
  Setup();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(g_dir);
  return 0;
}
