#include "device.h"

#include <dlfcn.h>

#include <memory>
#include <stdexcept>

namespace hybrid {
namespace {

template <typename Fn>
bool Resolve(const char* name, Fn* out, std::string* missing) {
  void* sym = dlsym(RTLD_DEFAULT, name);
  if (sym == nullptr) {
    if (missing->empty()) *missing = name;  // the first is enough to say which API
    return false;
  }
  *out = reinterpret_cast<Fn>(sym);
  return true;
}

void RunHostFunc(void* arg) {
  std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(arg));
  (*fn)();
}

}  // namespace

void CheckNccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

bool Device::Load(std::string* error) {
  std::string missing;
  bool ok = true;
  ok &= Resolve("hostcclStreamCreate", &stream_create_, &missing);
  ok &= Resolve("hostcclStreamDestroy", &stream_destroy_, &missing);
  ok &= Resolve("hostcclStreamSynchronize", &stream_synchronize_, &missing);
  ok &= Resolve("hostcclEventCreate", &event_create_, &missing);
  ok &= Resolve("hostcclEventDestroy", &event_destroy_, &missing);
  ok &= Resolve("hostcclEventRecord", &event_record_, &missing);
  ok &= Resolve("hostcclEventSynchronize", &event_synchronize_, &missing);
  ok &= Resolve("hostcclStreamWaitEvent", &stream_wait_event_, &missing);
  ok &= Resolve("hostcclLaunchKernelFunc", &launch_kernel_func_, &missing);
  ok &= Resolve("hostcclStreamCompute", &stream_compute_, &missing);
  if (!ok) {
    int version = 0;
    ncclGetVersion(&version);
    *error = "the libnccl.so.2 in this process (version code " + std::to_string(version) +
             ") has no host-stream API (missing " + missing +
             "): this example emulates compute on hostccl's streams; on the real NCCL it "
             "would need a GPU spin kernel, which it does not have. Put hostccl's "
             "libnccl.so.2 first on LD_LIBRARY_PATH (see docs/examples.md).";
    return false;
  }
  return true;
}

cudaStream_t Device::CreateStream() const {
  cudaStream_t s = nullptr;
  CheckNccl(stream_create_(&s), "hostcclStreamCreate");
  return s;
}

void Device::DestroyStream(cudaStream_t s) const {
  stream_destroy_(s);  // in a destructor: nothing sensible to do on failure
}

void Device::Synchronize(cudaStream_t s) const {
  CheckNccl(stream_synchronize_(s), "hostcclStreamSynchronize");
}

cudaEvent_t Device::CreateEvent() const {
  cudaEvent_t e = nullptr;
  CheckNccl(event_create_(&e), "hostcclEventCreate");
  return e;
}

void Device::DestroyEvent(cudaEvent_t e) const { event_destroy_(e); }

void Device::Record(cudaEvent_t e, cudaStream_t s) const {
  CheckNccl(event_record_(e, s), "hostcclEventRecord");
}

void Device::Wait(cudaStream_t s, cudaEvent_t e) const {
  CheckNccl(stream_wait_event_(s, e), "hostcclStreamWaitEvent");
}

void Device::HostWait(cudaEvent_t e) const {
  CheckNccl(event_synchronize_(e), "hostcclEventSynchronize");
}

void Device::Launch(cudaStream_t s, std::function<void()> fn) const {
  auto* heap = new std::function<void()>(std::move(fn));
  ncclResult_t r = launch_kernel_func_(s, &RunHostFunc, heap);
  if (r != ncclSuccess) {
    delete heap;
    CheckNccl(r, "hostcclLaunchKernelFunc");
  }
}

void Device::Compute(cudaStream_t s, int64_t us) const {
  if (us <= 0) return;
  CheckNccl(stream_compute_(s, static_cast<uint64_t>(us)), "hostcclStreamCompute");
}

}  // namespace hybrid
