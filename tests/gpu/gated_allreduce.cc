// gated_allreduce: a single-rank check of the gated launch on a real GPU,
// with the CUDA device backend and the scheduler engine.
//
//   gated_allreduce [path/to/libnccl.so.2]      (run.sh passes the path)
//
// What it checks, printing one PASS/FAIL line each (exit 0 only if all pass):
//   1. backend   SelectDevice() on the real NCCL picks "cuda".
//   2. gate      an AllReduce behind a closed gate does not run: its
//                completion event and the user stream's follow-up event stay
//                incomplete for 50 ms; after Open() both complete.
//   3. capture   IsCapturing() is false on an ordinary stream.
//   4. chunks    a 64 MiB AllReduce split by PlanChunks into chunks, each
//                behind its own gate on one dedicated stream, released by
//                the engine (trirace policy) and completed through event
//                polling: the result equals the input (1 rank: sum = input),
//                and every task was released and completed.
// It needs no CUDA toolkit at build time: libcuda and libnccl are loaded at
// run time, like the shim does.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "interpose/device/device.h"
#include "nccl.h"
#include "scheduler/chunk_planner.h"
#include "scheduler/engine.h"
#include "scheduler/trirace_policy.h"

namespace {

using trirace::device::Device;
using trirace::device::EventHandle;
using trirace::device::GateBlock;
using trirace::device::StreamHandle;
namespace sched = trirace::sched;

int failures = 0;
void Report(bool ok, const char* what, const std::string& detail = "") {
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail.empty() ? "" : ": ", detail.c_str());
  if (!ok) ++failures;
}

// The driver calls this program needs beyond the device interface: a
// context and device memory.
struct Cuda {
  int (*Init)(unsigned);
  int (*DeviceGet)(int*, int);
  int (*PrimaryCtxRetain)(void**, int);
  int (*CtxSetCurrent)(void*);
  int (*MemAlloc)(unsigned long long*, size_t);
  int (*MemFree)(unsigned long long);
  int (*MemcpyHtoD)(unsigned long long, const void*, size_t);
  int (*MemcpyDtoH)(void*, unsigned long long, size_t);
  int (*CtxSynchronize)();
};

template <typename Fn>
bool Sym(void* h, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(h, name));
  if (*out == nullptr) std::fprintf(stderr, "missing %s\n", name);
  return *out != nullptr;
}

struct Nccl {
  ncclResult_t (*GetUniqueId)(ncclUniqueId*);
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*CommDestroy)(ncclComm_t);
};

// Waits up to `ms` (0: just looks) for the event; true if it completed.
bool CompletesWithin(Device& dev, EventHandle e, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (true) {
    auto q = dev.QueryEvent(e);
    if (q.ok() && *q) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The launcher's side of the engine, reduced to what this check needs.
class Gates final : public sched::GateOpener, public sched::CompletionPoller {
 public:
  Gates(Device& dev, GateBlock& block) : dev_(dev), block_(block) {}
  void OpenGate(const sched::ReleasedTask& t) override { block_.Open(t.cookie, 1); }
  void Track(sched::TaskId id, EventHandle done) {
    std::lock_guard<std::mutex> lock(mu_);
    running_.push_back({id, done});
  }
  void PollCompletions(std::vector<sched::TaskId>* done) override {
    std::lock_guard<std::mutex> lock(mu_);
    while (!running_.empty()) {  // one dedicated stream: completions come in order
      auto q = dev_.QueryEvent(running_.front().second);
      if (!q.ok() || !*q) break;
      done->push_back(running_.front().first);
      running_.erase(running_.begin());
    }
  }

 private:
  Device& dev_;
  GateBlock& block_;
  std::mutex mu_;
  std::vector<std::pair<sched::TaskId, EventHandle>> running_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* nccl_path = argc > 1 ? argv[1] : "libnccl.so.2";
  void* nccl_lib = dlopen(nccl_path, RTLD_NOW | RTLD_GLOBAL);
  void* cuda_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (nccl_lib == nullptr || cuda_lib == nullptr) {
    std::printf("FAIL load: %s\n", dlerror());
    return 2;
  }
  Cuda cu{};
  Nccl nc{};
  bool syms = Sym(cuda_lib, "cuInit", &cu.Init) && Sym(cuda_lib, "cuDeviceGet", &cu.DeviceGet) &&
              Sym(cuda_lib, "cuDevicePrimaryCtxRetain", &cu.PrimaryCtxRetain) &&
              Sym(cuda_lib, "cuCtxSetCurrent", &cu.CtxSetCurrent) && Sym(cuda_lib, "cuMemAlloc_v2", &cu.MemAlloc) &&
              Sym(cuda_lib, "cuMemFree_v2", &cu.MemFree) && Sym(cuda_lib, "cuMemcpyHtoD_v2", &cu.MemcpyHtoD) &&
              Sym(cuda_lib, "cuMemcpyDtoH_v2", &cu.MemcpyDtoH) && Sym(cuda_lib, "cuCtxSynchronize", &cu.CtxSynchronize) &&
              Sym(nccl_lib, "ncclGetUniqueId", &nc.GetUniqueId) && Sym(nccl_lib, "ncclCommInitRank", &nc.CommInitRank) &&
              Sym(nccl_lib, "ncclAllReduce", &nc.AllReduce) && Sym(nccl_lib, "ncclCommDestroy", &nc.CommDestroy);
  if (!syms) return 2;
  int device = 0;
  void* ctx = nullptr;
  if (cu.Init(0) != 0 || cu.DeviceGet(&device, 0) != 0 || cu.PrimaryCtxRetain(&ctx, device) != 0 ||
      cu.CtxSetCurrent(ctx) != 0) {
    std::printf("FAIL cuda: no usable GPU context\n");
    return 2;
  }

  auto selected = trirace::device::SelectDevice(nccl_lib);
  Report(selected.ok() && (*selected)->name() == "cuda", "backend",
         selected.ok() ? std::string((*selected)->name()) : selected.status().ToString());
  if (!selected.ok()) return 1;
  Device& dev = **selected;

  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (nc.GetUniqueId(&id) != ncclSuccess || nc.CommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    std::printf("FAIL nccl: single-rank comm init failed\n");
    return 1;
  }

  const size_t count = 16u << 20;  // 64 MiB of floats
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;
  unsigned long long send = 0, recv = 0;
  cu.MemAlloc(&send, count * sizeof(float));
  cu.MemAlloc(&recv, count * sizeof(float));
  cu.MemcpyHtoD(send, host.data(), count * sizeof(float));

  auto user = dev.CreateStream();
  auto dedicated = dev.CreateStream();
  auto e_in = dev.CreateEvent();
  auto e_done = dev.CreateEvent();
  auto e_user = dev.CreateEvent();
  auto gates = dev.AllocateGates(sched::kMaxChunksPerOp + 1);
  if (!user.ok() || !dedicated.ok() || !e_in.ok() || !e_done.ok() || !e_user.ok() || !gates.ok()) {
    std::printf("FAIL setup: %s\n", gates.ok() ? "stream/event creation failed" : gates.status().ToString().c_str());
    return 1;
  }

  // 2. One op behind one gate.
  std::vector<float> zeros(count, 0.f);
  cu.MemcpyHtoD(recv, zeros.data(), count * sizeof(float));
  bool ok = dev.RecordEvent(*e_in, *user).ok() && dev.StreamWaitEvent(*dedicated, *e_in).ok() &&
            dev.WaitGate(*dedicated, **gates, 0, 1).ok() &&
            nc.AllReduce(reinterpret_cast<void*>(send), reinterpret_cast<void*>(recv), count, ncclFloat32, ncclSum,
                         comm, static_cast<cudaStream_t>(*dedicated)) == ncclSuccess &&
            dev.RecordEvent(*e_done, *dedicated).ok() && dev.StreamWaitEvent(*user, *e_done).ok() &&
            dev.RecordEvent(*e_user, *user).ok();
  const bool held = ok && !CompletesWithin(dev, *e_done, 50) && !CompletesWithin(dev, *e_user, 0);
  (*gates)->Open(0, 1);
  const bool ran = ok && CompletesWithin(dev, *e_user, 10000);
  cu.CtxSynchronize();
  std::vector<float> out(count);
  cu.MemcpyDtoH(out.data(), recv, count * sizeof(float));
  Report(held && ran && std::memcmp(out.data(), host.data(), count * sizeof(float)) == 0, "gate",
         held ? (ran ? "" : "did not complete after the gate opened") : "ran while its gate was closed");

  // 3. Capture query.
  auto capturing = dev.IsCapturing(*user);
  Report(capturing.ok() && !*capturing, "capture", capturing.ok() ? "" : capturing.status().ToString());

  // 4. Chunks behind gates, released by the engine.
  cu.MemcpyHtoD(recv, zeros.data(), count * sizeof(float));
  Gates launcher(dev, **gates);
  sched::EngineOptions options;
  options.max_hold_ns = 5'000'000;
  sched::Engine engine(std::make_unique<sched::TriracePolicy>(), &launcher, options);
  engine.SetCompletionPoller(&launcher);
  const sched::ChunkPlan plan = sched::PlanChunks(trirace::NcclFunc::kAllReduce, count, sizeof(float), 4u << 20);
  std::vector<EventHandle> chunk_done;
  ok = dev.RecordEvent(*e_in, *user).ok() && dev.StreamWaitEvent(*dedicated, *e_in).ok();
  for (size_t i = 0; ok && i < plan.chunks.size(); ++i) {
    const sched::Chunk& c = plan.chunks[i];
    auto done = dev.CreateEvent();
    ok = done.ok() && dev.WaitGate(*dedicated, **gates, i + 1, 1).ok() &&
         nc.AllReduce(reinterpret_cast<void*>(send + c.offset * sizeof(float)),
                      reinterpret_cast<void*>(recv + c.offset * sizeof(float)), c.count, ncclFloat32, ncclSum, comm,
                      static_cast<cudaStream_t>(*dedicated)) == ncclSuccess &&
         dev.RecordEvent(*done, *dedicated).ok();
    if (!ok) break;
    chunk_done.push_back(*done);
    sched::TaskSpec spec;
    spec.comm = 1;
    spec.traffic_class = trirace::TrafficClass::kDense;
    spec.bytes = c.count * sizeof(float);
    spec.chunk_index = static_cast<uint32_t>(i);
    spec.chunk_count = static_cast<uint32_t>(plan.chunks.size());
    spec.cookie = i + 1;
    launcher.Track(engine.Submit(spec), *done);
  }
  ok = ok && !chunk_done.empty() && dev.StreamWaitEvent(*user, chunk_done.back()).ok() &&
       dev.RecordEvent(*e_user, *user).ok();
  const bool finished = ok && CompletesWithin(dev, *e_user, 20000);
  for (int i = 0; i < 2000 && engine.running_count() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const sched::EngineStats st = engine.stats();
  cu.MemcpyDtoH(out.data(), recv, count * sizeof(float));
  const bool same = std::memcmp(out.data(), host.data(), count * sizeof(float)) == 0;
  char detail[160];
  std::snprintf(detail, sizeof detail, "%zu chunks, released %llu, completed %llu, polls %llu, result %s",
                plan.chunks.size(), static_cast<unsigned long long>(st.released),
                static_cast<unsigned long long>(st.completed), static_cast<unsigned long long>(st.polls),
                same ? "ok" : "WRONG");
  Report(finished && same && st.released == plan.chunks.size() && st.completed == plan.chunks.size(), "chunks",
         detail);
  engine.Stop();

  for (EventHandle e : chunk_done) (void)dev.DestroyEvent(e);
  (void)dev.DestroyEvent(*e_in);
  (void)dev.DestroyEvent(*e_done);
  (void)dev.DestroyEvent(*e_user);
  (void)dev.DestroyStream(*user);
  (void)dev.DestroyStream(*dedicated);
  nc.CommDestroy(comm);
  cu.MemFree(send);
  cu.MemFree(recv);
  std::printf("%s: %d check(s) failed\n", failures == 0 ? "OK" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
