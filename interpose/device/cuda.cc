// The CUDA backend of the device interface (device.h): the driver API
// through dlopen, no link-time dependency.
#include <dlfcn.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "interpose/device/cuda_driver.h"
#include "interpose/device/device.h"

namespace trirace::device {
namespace {

// Returns the failure of a driver call from the enclosing method.
#define TRIRACE_DEVICE_CHECK(expr, call)                  \
  do {                                                    \
    absl::Status _device_status = d_->Check((expr), (call)); \
    if (!_device_status.ok()) return _device_status;      \
  } while (0)

// The loaded driver: the library handle and its entry points. Shared by
// the device and the gate blocks it made, so either may go first.
struct Driver {
  void* handle = nullptr;
  cu::Api api{};
  ~Driver() {
    if (handle != nullptr) dlclose(handle);
  }

  std::string Describe(cu::Result r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (api.GetErrorName == nullptr || api.GetErrorName(r, &name) != cu::kSuccess) name = nullptr;
    if (api.GetErrorString == nullptr || api.GetErrorString(r, &text) != cu::kSuccess) text = nullptr;
    return absl::StrCat(name != nullptr ? name : "CUDA error", " (", r, ")", text != nullptr ? ": " : "",
                        text != nullptr ? text : "");
  }
  absl::Status Check(cu::Result r, absl::string_view call) const {
    if (r == cu::kSuccess) return absl::OkStatus();
    return absl::InternalError(absl::StrCat(call, " failed: ", Describe(r)));
  }
};

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* out) {
  void* p = dlsym(handle, symbol);
  if (p == nullptr) return false;
  *out = reinterpret_cast<Fn>(p);
  return true;
}

class CudaGateBlock final : public GateBlock {
 public:
  CudaGateBlock(std::shared_ptr<const Driver> driver, uint32_t* host, cu::DevicePtr device, size_t count)
      : GateBlock(host, count), driver_(std::move(driver)), host_(host), device_(device) {}
  ~CudaGateBlock() override { driver_->api.MemFreeHost(host_); }
  cu::DevicePtr device_word(size_t index) const { return device_ + index * sizeof(uint32_t); }

 private:
  std::shared_ptr<const Driver> driver_;
  uint32_t* host_;
  cu::DevicePtr device_;
};

cu::Stream S(StreamHandle s) { return static_cast<cu::Stream>(s); }
cu::Event E(EventHandle e) { return static_cast<cu::Event>(e); }

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(std::shared_ptr<const Driver> driver) : d_(std::move(driver)) {}

  absl::string_view name() const override { return "cuda"; }

  absl::StatusOr<StreamHandle> CreateStream() override {
    cu::Stream s = nullptr;
    TRIRACE_DEVICE_CHECK(d_->api.StreamCreate(&s, cu::kStreamNonBlocking), "cuStreamCreate");
    return static_cast<StreamHandle>(s);
  }
  absl::Status DestroyStream(StreamHandle s) override {
    return d_->Check(d_->api.StreamDestroy(S(s)), "cuStreamDestroy_v2");
  }
  absl::StatusOr<EventHandle> CreateEvent() override {
    cu::Event e = nullptr;
    TRIRACE_DEVICE_CHECK(d_->api.EventCreate(&e, cu::kEventDisableTiming), "cuEventCreate");
    return static_cast<EventHandle>(e);
  }
  absl::Status DestroyEvent(EventHandle e) override {
    return d_->Check(d_->api.EventDestroy(E(e)), "cuEventDestroy_v2");
  }
  absl::Status RecordEvent(EventHandle e, StreamHandle s) override {
    return d_->Check(d_->api.EventRecord(E(e), S(s)), "cuEventRecord");
  }
  absl::Status StreamWaitEvent(StreamHandle s, EventHandle e) override {
    return d_->Check(d_->api.StreamWaitEvent(S(s), E(e), 0), "cuStreamWaitEvent");
  }
  absl::StatusOr<bool> QueryEvent(EventHandle e) override {
    const cu::Result r = d_->api.EventQuery(E(e));
    if (r == cu::kNotReady) return false;
    TRIRACE_DEVICE_CHECK(r, "cuEventQuery");
    return true;
  }
  absl::Status SynchronizeEvent(EventHandle e) override {
    return d_->Check(d_->api.EventSynchronize(E(e)), "cuEventSynchronize");
  }

  absl::StatusOr<CurrentDevice> MakeCurrent(int ordinal) override {
    const cu::Api& a = d_->api;
    if (a.DeviceGet == nullptr || a.DevicePrimaryCtxRetain == nullptr || a.DevicePrimaryCtxRelease == nullptr ||
        a.CtxSetCurrent == nullptr) {
      return absl::UnimplementedError("the CUDA driver lacks the primary-context calls");
    }
    cu::Context previous = nullptr;
    TRIRACE_DEVICE_CHECK(a.CtxGetCurrent(&previous), "cuCtxGetCurrent");
    cu::Device dev = 0;
    TRIRACE_DEVICE_CHECK(a.DeviceGet(&dev, ordinal), "cuDeviceGet");
    cu::Context ctx = nullptr;
    TRIRACE_DEVICE_CHECK(a.DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    if (const cu::Result r = a.CtxSetCurrent(ctx); r != cu::kSuccess) {
      a.DevicePrimaryCtxRelease(dev);
      return d_->Check(r, "cuCtxSetCurrent");
    }
    const cu::Api* api = &a;
    return CurrentDevice([api, previous, dev] {
      api->CtxSetCurrent(previous);
      api->DevicePrimaryCtxRelease(dev);
    });
  }

  absl::StatusOr<std::string> PciBusId(int ordinal) override {
    if (d_->api.DeviceGet == nullptr || d_->api.DeviceGetPCIBusId == nullptr) {
      return absl::UnimplementedError("the CUDA driver lacks cuDeviceGetPCIBusId");
    }
    cu::Device dev = 0;
    TRIRACE_DEVICE_CHECK(d_->api.DeviceGet(&dev, ordinal), "cuDeviceGet");
    char busid[32] = {};
    TRIRACE_DEVICE_CHECK(d_->api.DeviceGetPCIBusId(busid, sizeof(busid) - 1, dev), "cuDeviceGetPCIBusId");
    return std::string(busid);
  }

  absl::StatusOr<std::unique_ptr<GateBlock>> AllocateGates(size_t count) override {
    if (count == 0) return absl::InvalidArgumentError("AllocateGates: count must be at least 1");
    cu::Context ctx = nullptr;
    TRIRACE_DEVICE_CHECK(d_->api.CtxGetCurrent(&ctx), "cuCtxGetCurrent");
    if (ctx == nullptr) {
      return absl::FailedPreconditionError("CUDA gates: no current CUDA context on the calling thread");
    }
    cu::Device dev = 0;
    int can_map = 0;
    TRIRACE_DEVICE_CHECK(d_->api.CtxGetDevice(&dev), "cuCtxGetDevice");
    TRIRACE_DEVICE_CHECK(d_->api.DeviceGetAttribute(&can_map, cu::kAttrCanMapHostMemory, dev),
                         "cuDeviceGetAttribute(CAN_MAP_HOST_MEMORY)");
    if (can_map == 0) {
      return absl::FailedPreconditionError(absl::StrCat("CUDA gates: device ", dev, " cannot map host memory"));
    }
    void* host = nullptr;
    TRIRACE_DEVICE_CHECK(
        d_->api.MemHostAlloc(&host, count * sizeof(uint32_t), cu::kMemHostAllocDeviceMap | cu::kMemHostAllocPortable),
        "cuMemHostAlloc(DEVICEMAP)");
    cu::DevicePtr dptr = 0;
    const cu::Result r = d_->api.MemHostGetDevicePointer(&dptr, host, 0);
    if (r != cu::kSuccess) {
      d_->api.MemFreeHost(host);
      return d_->Check(r, "cuMemHostGetDevicePointer_v2");
    }
    auto* words = static_cast<uint32_t*>(host);
    for (size_t i = 0; i < count; ++i) words[i] = 0;
    return std::unique_ptr<GateBlock>(new CudaGateBlock(d_, words, dptr, count));
  }

  absl::Status WaitGate(StreamHandle s, const GateBlock& gates, size_t index, uint32_t value) override {
    const auto* block = dynamic_cast<const CudaGateBlock*>(&gates);
    if (block == nullptr) return absl::InvalidArgumentError("WaitGate: the gate block was not made by the CUDA backend");
    if (index >= gates.size()) {
      return absl::OutOfRangeError(absl::StrCat("WaitGate: index ", index, " >= gate count ", gates.size()));
    }
    return d_->Check(d_->api.StreamWaitValue32(S(s), block->device_word(index), value, cu::kStreamWaitValueGeq),
                     "cuStreamWaitValue32_v2");
  }

  absl::StatusOr<bool> IsCapturing(StreamHandle s) override {
    int status = cu::kCaptureStatusNone;
    TRIRACE_DEVICE_CHECK(d_->api.StreamIsCapturing(S(s), &status), "cuStreamIsCapturing");
    return status != cu::kCaptureStatusNone;
  }

  absl::Status LaunchHostFunc(StreamHandle s, HostFn fn, void* arg) override {
    return d_->Check(d_->api.LaunchHostFunc(S(s), fn, arg), "cuLaunchHostFunc");
  }

 private:
  std::shared_ptr<const Driver> d_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Device>> OpenCudaDevice(const char* library) {
  auto driver = std::make_shared<Driver>();
  driver->handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (driver->handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver: dlopen(", library, ") failed: ", why != nullptr ? why : "unknown error"));
  }
  cu::Api& a = driver->api;
  void* h = driver->handle;
  Resolve(h, "cuGetErrorString", &a.GetErrorString);
  Resolve(h, "cuGetErrorName", &a.GetErrorName);
  if (!Resolve(h, "cuInit", &a.Init)) {
    return absl::FailedPreconditionError(absl::StrCat("no CUDA driver: ", library, " has no cuInit"));
  }
  const cu::Result init = a.Init(0);
  if (init != cu::kSuccess) {
    return absl::FailedPreconditionError(absl::StrCat("cuInit failed: ", driver->Describe(init)));
  }
  struct Entry {
    const char* symbol;
    bool ok;
  };
  const Entry entries[] = {
      {"cuDriverGetVersion", Resolve(h, "cuDriverGetVersion", &a.DriverGetVersion)},
      {"cuCtxGetCurrent", Resolve(h, "cuCtxGetCurrent", &a.CtxGetCurrent)},
      {"cuCtxGetDevice", Resolve(h, "cuCtxGetDevice", &a.CtxGetDevice)},
      {"cuDeviceGetAttribute", Resolve(h, "cuDeviceGetAttribute", &a.DeviceGetAttribute)},
      {"cuStreamCreate", Resolve(h, "cuStreamCreate", &a.StreamCreate)},
      {"cuStreamDestroy_v2", Resolve(h, "cuStreamDestroy_v2", &a.StreamDestroy)},
      {"cuEventCreate", Resolve(h, "cuEventCreate", &a.EventCreate)},
      {"cuEventDestroy_v2", Resolve(h, "cuEventDestroy_v2", &a.EventDestroy)},
      {"cuEventRecord", Resolve(h, "cuEventRecord", &a.EventRecord)},
      {"cuEventQuery", Resolve(h, "cuEventQuery", &a.EventQuery)},
      {"cuEventSynchronize", Resolve(h, "cuEventSynchronize", &a.EventSynchronize)},
      {"cuStreamWaitEvent", Resolve(h, "cuStreamWaitEvent", &a.StreamWaitEvent)},
      {"cuStreamWaitValue32_v2", Resolve(h, "cuStreamWaitValue32_v2", &a.StreamWaitValue32)},
      {"cuMemHostAlloc", Resolve(h, "cuMemHostAlloc", &a.MemHostAlloc)},
      {"cuMemHostGetDevicePointer_v2", Resolve(h, "cuMemHostGetDevicePointer_v2", &a.MemHostGetDevicePointer)},
      {"cuMemFreeHost", Resolve(h, "cuMemFreeHost", &a.MemFreeHost)},
      {"cuStreamIsCapturing", Resolve(h, "cuStreamIsCapturing", &a.StreamIsCapturing)},
      {"cuLaunchHostFunc", Resolve(h, "cuLaunchHostFunc", &a.LaunchHostFunc)},
  };
  Resolve(h, "cuDeviceGet", &a.DeviceGet);
  Resolve(h, "cuDeviceGetPCIBusId", &a.DeviceGetPCIBusId);
  Resolve(h, "cuDevicePrimaryCtxRetain", &a.DevicePrimaryCtxRetain);
  Resolve(h, "cuDevicePrimaryCtxRelease_v2", &a.DevicePrimaryCtxRelease);
  Resolve(h, "cuCtxSetCurrent", &a.CtxSetCurrent);
  for (const Entry& e : entries) {
    if (!e.ok) {
      return absl::FailedPreconditionError(
          absl::StrCat("CUDA driver ", library, " lacks ", e.symbol, " (driver too old?)"));
    }
  }
  int version = 0;
  if (a.DriverGetVersion(&version) != cu::kSuccess || version < cu::kMemOpsDefaultDriverVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "CUDA driver version ", version, " is older than 11.7: stream memory operations (gates) are not available"));
  }
  return std::unique_ptr<Device>(new CudaDevice(std::move(driver)));
}

}  // namespace trirace::device
