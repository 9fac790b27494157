// shim_gpu_check: real NCCL collectives on one GPU, every result checked
// exactly; run with and without LD_PRELOAD=libtrirace.so (any TRIRACE_MODE)
// it shows that the shim changes no result, order or return code, and never
// hangs (tests/gpu/README.md).
//
//   shim_gpu_check [--timeout S] [--iters N] [--max-mib M]
//     (or SHIM_GPU_CHECK_TIMEOUT / _ITERS / _MAX_MIB; defaults 120, 3, 64)
//
// Three 1-rank comms (ncclCommInitRank, ncclCommSplit of it,
// ncclCommInitRankConfig with blocking=1). Each iteration, on every comm:
// AllReduce float and int32 sums of 1 element to M MiB (one in place), then
// AllReduce -> Broadcast -> Reduce -> AllGather -> ReduceScatter ->
// Send/Recv to self (a group) -> a group of two AllReduces on stream 1;
// stream 2 waits for stream 1 through an event, runs one more AllReduce and
// copies all outputs back. Outputs are set to a sentinel on their stream
// just before their op and inputs differ per pass, so a result read early,
// a stale one or a lost chunk is a mismatch (one rank: result = input).
// Prints "CHECKSUM <hex>" (FNV-1a of all results) and PASS/FAIL; exit 0
// pass, 1 fail, 77 no GPU, 124 the watchdog fired (hang).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<const char*> g_step{"start"};
std::atomic<int> g_pass{0};
std::atomic<bool> g_done{false};

[[noreturn]] void Fail(const char* call, const char* error, int line) {
  std::printf("FAIL shim_gpu_check: %s returned %s (line %d, pass %d, step %s)\n", call, error, line,
              g_pass.load(), g_step.load());
  std::fflush(stdout);
  std::exit(1);
}

#define CUDA_CHECK(expr) \
  do { if (const cudaError_t e_ = (expr); e_ != cudaSuccess) Fail(#expr, cudaGetErrorString(e_), __LINE__); } while (0)
#define NCCL_CHECK(expr) \
  do { if (const ncclResult_t r_ = (expr); r_ != ncclSuccess) Fail(#expr, ncclGetErrorString(r_), __LINE__); } while (0)

// Only atomics and a sleep: safe while exit() tears the process down.
void Watchdog(int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!g_done.load()) {
    if (std::chrono::steady_clock::now() >= end) {
      std::printf("FAIL shim_gpu_check: watchdog: still running after %d s (pass %d, step %s): hang\n", seconds,
                  g_pass.load(), g_step.load());
      std::fflush(stdout);
      std::_Exit(124);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

long Setting(int argc, char** argv, const char* flag, const char* env, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::strtol(argv[i + 1], nullptr, 10);
  }
  const char* v = std::getenv(env);
  return v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 10) : fallback;
}

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Integer-valued inputs (exact in float), different for every pass and op.
void Fill(std::vector<char>* host, bool is_float, size_t n, uint64_t seed) {
  host->resize(n * 4);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t m = Mix(seed * 1000003u + i);
    if (is_float) {
      const float f = static_cast<float>(static_cast<int>(m % 2001) - 1000);
      std::memcpy(host->data() + i * 4, &f, 4);
    } else {
      const int32_t v = static_cast<int32_t>(m % 2000001) - 1000000;
      std::memcpy(host->data() + i * 4, &v, 4);
    }
  }
}

struct Result {
  std::string name;
  bool is_float = true;
  size_t count = 0;
  void* dev = nullptr;     // the op's output
  void* pinned = nullptr;  // where stream 2 copies it
  const std::vector<char>* want = nullptr;
};

struct Checker {
  uint64_t hash = 0xCBF29CE484222325ull;
  size_t results = 0, bytes = 0, bad = 0;

  void Add(const Result& r, int pass, const char* comm) {
    const size_t n = r.count * 4;
    const char* got = static_cast<const char*>(r.pinned);
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, got + i, 8);
      hash = (hash ^ w) * 0x100000001B3ull;
    }
    for (size_t i = n / 8 * 8; i < n; ++i) hash = (hash ^ static_cast<unsigned char>(got[i])) * 0x100000001B3ull;
    ++results;
    bytes += n;
    if (std::memcmp(got, r.want->data(), n) == 0) return;
    size_t first = r.count, wrong = 0;
    for (size_t i = 0; i < r.count; ++i) {
      if (std::memcmp(got + i * 4, r.want->data() + i * 4, 4) != 0 && wrong++ == 0) first = i;
    }
    if (++bad > 20) return;
    auto text = [&](const char* base) {
      char buf[32];
      float f;
      int32_t v;
      std::memcpy(&f, base + first * 4, 4);
      std::memcpy(&v, base + first * 4, 4);
      if (r.is_float) std::snprintf(buf, sizeof buf, "%.9g", f); else std::snprintf(buf, sizeof buf, "%d", v);
      return std::string(buf);
    };
    std::printf("MISMATCH pass %d comm %s %s (%zu elements): %zu wrong, first at %zu: got %s want %s\n", pass, comm,
                r.name.c_str(), r.count, wrong, first, text(got).c_str(), text(r.want->data()).c_str());
  }
};

void* DevAlloc(size_t count) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, count * 4));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int timeout_s = static_cast<int>(Setting(argc, argv, "--timeout", "SHIM_GPU_CHECK_TIMEOUT", 120));
  const int iters = static_cast<int>(Setting(argc, argv, "--iters", "SHIM_GPU_CHECK_ITERS", 3));
  const long max_mib = Setting(argc, argv, "--max-mib", "SHIM_GPU_CHECK_MAX_MIB", 64);
  if (timeout_s <= 0 || iters <= 0 || max_mib <= 0) {
    std::printf("usage: shim_gpu_check [--timeout S] [--iters N] [--max-mib M] (all > 0)\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::thread watchdog(Watchdog, timeout_s);

  int ndev = 0;
  const cudaError_t count_err = cudaGetDeviceCount(&ndev);
  if (count_err != cudaSuccess || ndev == 0) {
    std::printf("SKIP shim_gpu_check: no CUDA GPU (cudaGetDeviceCount: %s, %d devices)\n",
                count_err == cudaSuccess ? "ok" : cudaGetErrorString(count_err), ndev);
    g_done = true;
    watchdog.join();
    return 77;
  }
  g_step = "setup";
  CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int rt = 0, drv = 0, nccl_version = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  NCCL_CHECK(ncclGetVersion(&nccl_version));
  const char* preload = std::getenv("LD_PRELOAD");
  const char* mode = std::getenv("TRIRACE_MODE");
  std::printf("shim_gpu_check: %s (sm_%d%d), CUDA runtime %d driver %d, NCCL %d (nccl.h %d.%d.%d); "
              "LD_PRELOAD=%s TRIRACE_MODE=%s; %d iterations, up to %ld MiB\n",
              prop.name, prop.major, prop.minor, rt, drv, nccl_version, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH,
              preload ? preload : "", mode ? mode : "", iters, max_mib);

  g_step = "comm init";
  const char* comm_names[3] = {"init-rank", "split", "init-rank-config"};
  ncclComm_t comms[3] = {nullptr, nullptr, nullptr};
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  NCCL_CHECK(ncclCommInitRank(&comms[0], 1, id, 0));
  NCCL_CHECK(ncclCommSplit(comms[0], 0, 0, &comms[1], nullptr));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  NCCL_CHECK(ncclGetUniqueId(&id));
  NCCL_CHECK(ncclCommInitRankConfig(&comms[2], 1, id, 0, &config));
  if (comms[1] == nullptr) Fail("ncclCommSplit", "no new communicator", __LINE__);

  cudaStream_t s1, s2;
  cudaEvent_t s1_done;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&s1_done, cudaEventDisableTiming));

  // Sizes in elements (4 bytes each), capped at max_mib.
  const size_t cap = static_cast<size_t>(max_mib) << 18;
  std::vector<size_t> sizes;
  for (size_t n : {size_t{1}, size_t{2}, size_t{1000}, size_t{65537}, (size_t{1} << 20) - 1, size_t{1} << 20,
                   (size_t{1} << 20) + 1, (size_t{4} << 20) + 3, size_t{16} << 20}) {
    if (n <= cap) sizes.push_back(n);
  }
  if (sizes.back() != cap && cap < (size_t{16} << 20)) sizes.push_back(cap);
  const size_t chain_n = std::min((size_t{3} << 20) + 5, cap);

  // Inputs (device + host copy) and results, laid out once, reused per pass.
  struct Input {
    bool is_float;
    size_t count;
    void* dev;
    std::vector<char> host;
  };
  std::vector<Input> inputs;
  std::vector<Result> results;
  auto add_input = [&](bool is_float, size_t n) {
    inputs.push_back({is_float, n, DevAlloc(n), {}});
    return inputs.size() - 1;
  };
  auto add_result = [&](const std::string& name, size_t input) {
    Result r;
    r.name = name;
    r.is_float = inputs[input].is_float;
    r.count = inputs[input].count;
    r.dev = DevAlloc(r.count);
    CUDA_CHECK(cudaMallocHost(&r.pinned, r.count * 4));
    results.push_back(r);
    return results.size() - 1;
  };
  std::vector<std::pair<size_t, size_t>> sweep;  // (input, result)
  for (bool is_float : {true, false}) {
    for (size_t n : sizes) {
      const size_t in = add_input(is_float, n);
      sweep.emplace_back(in, add_result(std::string(is_float ? "allreduce-f32-" : "allreduce-i32-") +
                                            std::to_string(n), in));
    }
  }
  const size_t big = sweep[sizes.size() - 1].first;
  const size_t inplace = add_result("allreduce-f32-inplace-" + std::to_string(inputs[big].count), big);
  const size_t x = add_input(true, chain_n), xi = add_input(false, chain_n);
  const char* chain_names[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "sendrecv",
                               "group-allreduce-f32", "group-allreduce-i32", "stream2-allreduce"};
  std::vector<size_t> chain;
  for (int i = 0; i < 9; ++i) chain.push_back(add_result(std::string("chain-") + chain_names[i], i == 7 ? xi : x));

  Checker check;
  const auto t0 = std::chrono::steady_clock::now();
  int pass = 0;
  for (int it = 0; it < iters; ++it) {
    for (int c = 0; c < 3; ++c) {
      g_pass = ++pass;
      ncclComm_t comm = comms[c];
      g_step = "upload";
      for (size_t i = 0; i < inputs.size(); ++i) {
        Fill(&inputs[i].host, inputs[i].is_float, inputs[i].count, static_cast<uint64_t>(pass) * 64 + i);
        CUDA_CHECK(cudaMemcpy(inputs[i].dev, inputs[i].host.data(), inputs[i].count * 4, cudaMemcpyHostToDevice));
      }
      for (auto [in, out] : sweep) results[out].want = &inputs[in].host;
      results[inplace].want = &inputs[big].host;
      for (size_t k = 0; k < chain.size(); ++k) results[chain[k]].want = &inputs[k == 7 ? xi : x].host;
      auto dev = [&](size_t r) { return results[r].dev; };
      auto sentinel = [&](size_t r, cudaStream_t s) {
        CUDA_CHECK(cudaMemsetAsync(results[r].dev, 0xFF, results[r].count * 4, s));
      };

      g_step = "sweep";
      for (auto [in, out] : sweep) {
        sentinel(out, s1);
        NCCL_CHECK(ncclAllReduce(inputs[in].dev, dev(out), inputs[in].count,
                                 inputs[in].is_float ? ncclFloat32 : ncclInt32, ncclSum, comm, s1));
      }
      sentinel(inplace, s1);
      CUDA_CHECK(cudaMemcpyAsync(dev(inplace), inputs[big].dev, inputs[big].count * 4, cudaMemcpyDeviceToDevice, s1));
      NCCL_CHECK(ncclAllReduce(dev(inplace), dev(inplace), inputs[big].count, ncclFloat32, ncclSum, comm, s1));

      g_step = "chain";
      const size_t n = chain_n;
      for (size_t k = 0; k < 8; ++k) sentinel(chain[k], s1);
      NCCL_CHECK(ncclAllReduce(inputs[x].dev, dev(chain[0]), n, ncclFloat32, ncclSum, comm, s1));
      NCCL_CHECK(ncclBroadcast(dev(chain[0]), dev(chain[1]), n, ncclFloat32, 0, comm, s1));
      NCCL_CHECK(ncclReduce(dev(chain[1]), dev(chain[2]), n, ncclFloat32, ncclSum, 0, comm, s1));
      NCCL_CHECK(ncclAllGather(dev(chain[2]), dev(chain[3]), n, ncclFloat32, comm, s1));
      NCCL_CHECK(ncclReduceScatter(dev(chain[3]), dev(chain[4]), n, ncclFloat32, ncclSum, comm, s1));
      NCCL_CHECK(ncclGroupStart());
      NCCL_CHECK(ncclSend(dev(chain[4]), n, ncclFloat32, 0, comm, s1));
      NCCL_CHECK(ncclRecv(dev(chain[5]), n, ncclFloat32, 0, comm, s1));
      NCCL_CHECK(ncclGroupEnd());
      NCCL_CHECK(ncclGroupStart());
      NCCL_CHECK(ncclAllReduce(dev(chain[5]), dev(chain[6]), n, ncclFloat32, ncclSum, comm, s1));
      NCCL_CHECK(ncclAllReduce(inputs[xi].dev, dev(chain[7]), n, ncclInt32, ncclSum, comm, s1));
      NCCL_CHECK(ncclGroupEnd());

      g_step = "stream 2";
      CUDA_CHECK(cudaEventRecord(s1_done, s1));
      CUDA_CHECK(cudaStreamWaitEvent(s2, s1_done, 0));
      sentinel(chain[8], s2);
      NCCL_CHECK(ncclAllReduce(dev(chain[6]), dev(chain[8]), n, ncclFloat32, ncclSum, comm, s2));
      for (const Result& r : results) {
        CUDA_CHECK(cudaMemcpyAsync(r.pinned, r.dev, r.count * 4, cudaMemcpyDeviceToHost, s2));
      }
      g_step = "synchronize";
      CUDA_CHECK(cudaStreamSynchronize(s2));
      CUDA_CHECK(cudaStreamSynchronize(s1));
      g_step = "verify";
      const size_t bad_before = check.bad;
      for (const Result& r : results) check.Add(r, pass, comm_names[c]);
      std::printf("pass %d comm %s: %zu results, %s\n", pass, comm_names[c], results.size(),
                  check.bad == bad_before ? "all exact" : "MISMATCHES");
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  g_step = "teardown";
  CUDA_CHECK(cudaDeviceSynchronize());
  NCCL_CHECK(ncclCommDestroy(comms[1]));
  NCCL_CHECK(ncclCommDestroy(comms[0]));
  NCCL_CHECK(ncclCommDestroy(comms[2]));
  for (Result& r : results) {
    CUDA_CHECK(cudaFree(r.dev));
    CUDA_CHECK(cudaFreeHost(r.pinned));
  }
  for (Input& in : inputs) CUDA_CHECK(cudaFree(in.dev));
  CUDA_CHECK(cudaEventDestroy(s1_done));
  CUDA_CHECK(cudaStreamDestroy(s1));
  CUDA_CHECK(cudaStreamDestroy(s2));
  CUDA_CHECK(cudaGetLastError());
  g_done = true;
  watchdog.join();

  std::printf("CHECKSUM %016llx\n", static_cast<unsigned long long>(check.hash));
  std::printf("%s shim_gpu_check: %d passes, %zu results, %.1f MiB compared, %zu mismatched, %.2f s\n",
              check.bad == 0 ? "PASS" : "FAIL", pass, check.results, check.bytes / 1048576.0, check.bad, secs);
  return check.bad == 0 ? 0 : 1;
}
