// The host backend of the device interface (device.h): hostccl's stream API
// (hostccl/include/hostccl/stream.h), resolved with dlsym from the NCCL
// library handle, so nothing links hostccl.
#include <dlfcn.h>

#include <new>

#include <string>

#include "absl/strings/str_cat.h"
#include "interpose/device/device.h"
#include "nccl.h"

namespace trirace::device {
namespace {

// The hostccl entry points (signatures as in hostccl/stream.h).
struct HostApi {
  ncclResult_t (*StreamCreate)(cudaStream_t*);
  ncclResult_t (*StreamDestroy)(cudaStream_t);
  ncclResult_t (*EventCreate)(cudaEvent_t*);
  ncclResult_t (*EventDestroy)(cudaEvent_t);
  ncclResult_t (*EventRecord)(cudaEvent_t, cudaStream_t);
  ncclResult_t (*EventQuery)(cudaEvent_t);
  ncclResult_t (*EventSynchronize)(cudaEvent_t);
  ncclResult_t (*StreamWaitEvent)(cudaStream_t, cudaEvent_t);
  ncclResult_t (*LaunchHostFunc)(cudaStream_t, void (*)(void*), void*);
  ncclResult_t (*LaunchKernelFunc)(cudaStream_t, void (*)(void*), void*);  // optional: nullptr
  ncclResult_t (*StreamWaitValue32)(cudaStream_t, const volatile uint32_t*, uint32_t);
  ncclResult_t (*StreamCheck)(cudaStream_t);  // optional: nullptr
};

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* out) {
  void* p = dlsym(handle, symbol);
  if (p == nullptr) return false;
  *out = reinterpret_cast<Fn>(p);
  return true;
}

absl::Status Check(ncclResult_t r, absl::string_view call) {
  if (r == ncclSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, " failed: ncclResult_t ", static_cast<int>(r)));
}

// Returns the failure of a hostccl call from the enclosing method.
#define TRIRACE_RETURN_IF_HOST_ERROR(expr, call)          \
  do {                                                    \
    absl::Status _host_status = Check((expr), (call));    \
    if (!_host_status.ok()) return _host_status;          \
  } while (0)

// Plain host words: hostccl's stream workers read them directly.
class HostGateBlock final : public GateBlock {
 public:
  HostGateBlock(uint32_t* words, size_t count) : GateBlock(words, count), words_(words) {}
  ~HostGateBlock() override { delete[] words_; }

 private:
  uint32_t* words_;
};

cudaStream_t S(StreamHandle s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t E(EventHandle e) { return static_cast<cudaEvent_t>(e); }

class HostDevice final : public Device {
 public:
  explicit HostDevice(const HostApi& api) : api_(api) {}

  absl::string_view name() const override { return "host"; }

  absl::StatusOr<StreamHandle> CreateStream() override {
    cudaStream_t s = nullptr;
    TRIRACE_RETURN_IF_HOST_ERROR(api_.StreamCreate(&s), "hostcclStreamCreate");
    return static_cast<StreamHandle>(s);
  }
  absl::Status DestroyStream(StreamHandle s) override { return Check(api_.StreamDestroy(S(s)), "hostcclStreamDestroy"); }
  absl::StatusOr<EventHandle> CreateEvent() override {
    cudaEvent_t e = nullptr;
    TRIRACE_RETURN_IF_HOST_ERROR(api_.EventCreate(&e), "hostcclEventCreate");
    return static_cast<EventHandle>(e);
  }
  absl::Status DestroyEvent(EventHandle e) override { return Check(api_.EventDestroy(E(e)), "hostcclEventDestroy"); }
  absl::Status RecordEvent(EventHandle e, StreamHandle s) override {
    return Check(api_.EventRecord(E(e), S(s)), "hostcclEventRecord");
  }
  absl::Status StreamWaitEvent(StreamHandle s, EventHandle e) override {
    return Check(api_.StreamWaitEvent(S(s), E(e)), "hostcclStreamWaitEvent");
  }
  absl::StatusOr<bool> QueryEvent(EventHandle e) override {
    const ncclResult_t r = api_.EventQuery(E(e));
    if (r == ncclInProgress) return false;
    TRIRACE_RETURN_IF_HOST_ERROR(r, "hostcclEventQuery");
    return true;
  }
  absl::Status SynchronizeEvent(EventHandle e) override {
    return Check(api_.EventSynchronize(E(e)), "hostcclEventSynchronize");
  }

  absl::StatusOr<std::unique_ptr<GateBlock>> AllocateGates(size_t count) override {
    if (count == 0) return absl::InvalidArgumentError("AllocateGates: count must be at least 1");
    auto* words = new (std::nothrow) uint32_t[count]();
    if (words == nullptr) return absl::ResourceExhaustedError(absl::StrCat("AllocateGates: ", count, " words"));
    return std::unique_ptr<GateBlock>(new HostGateBlock(words, count));
  }

  absl::Status WaitGate(StreamHandle s, const GateBlock& gates, size_t index, uint32_t value) override {
    if (dynamic_cast<const HostGateBlock*>(&gates) == nullptr) {
      return absl::InvalidArgumentError("WaitGate: the gate block was not made by the host backend");
    }
    if (index >= gates.size()) {
      return absl::OutOfRangeError(absl::StrCat("WaitGate: index ", index, " >= gate count ", gates.size()));
    }
    return Check(api_.StreamWaitValue32(S(s), gates.host_word(index), value), "hostcclStreamWaitValue32");
  }

  bool StreamIsValid(StreamHandle s) override {
    return api_.StreamCheck == nullptr || s == nullptr || api_.StreamCheck(S(s)) == ncclSuccess;
  }

  absl::StatusOr<bool> IsCapturing(StreamHandle) override { return false; }  // host streams are never captured

  absl::Status LaunchHostFunc(StreamHandle s, HostFn fn, void* arg) override {
    return Check(api_.LaunchHostFunc(S(s), fn, arg), "hostcclLaunchHostFunc");
  }
  bool inline_funcs() const override { return api_.LaunchKernelFunc != nullptr; }
  absl::Status LaunchInlineFunc(StreamHandle s, HostFn fn, void* arg) override {
    if (api_.LaunchKernelFunc == nullptr) return Device::LaunchInlineFunc(s, fn, arg);
    return Check(api_.LaunchKernelFunc(S(s), fn, arg), "hostcclLaunchKernelFunc");
  }
  absl::StatusOr<CurrentDevice> MakeCurrent(int) override { return CurrentDevice(); }
  absl::StatusOr<std::string> PciBusId(int ordinal) override {
    return absl::NotFoundError(absl::StrCat("host streams: device ", ordinal, " is not a GPU"));
  }

 private:
  HostApi api_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Device>> OpenHostDevice(void* nccl_handle) {
  if (nccl_handle == nullptr) return absl::InvalidArgumentError("OpenHostDevice: null NCCL library handle");
  HostApi a{};
  struct Entry {
    const char* symbol;
    bool ok;
  };
  const Entry entries[] = {
      {"hostcclStreamCreate", Resolve(nccl_handle, "hostcclStreamCreate", &a.StreamCreate)},
      {"hostcclStreamDestroy", Resolve(nccl_handle, "hostcclStreamDestroy", &a.StreamDestroy)},
      {"hostcclEventCreate", Resolve(nccl_handle, "hostcclEventCreate", &a.EventCreate)},
      {"hostcclEventDestroy", Resolve(nccl_handle, "hostcclEventDestroy", &a.EventDestroy)},
      {"hostcclEventRecord", Resolve(nccl_handle, "hostcclEventRecord", &a.EventRecord)},
      {"hostcclEventQuery", Resolve(nccl_handle, "hostcclEventQuery", &a.EventQuery)},
      {"hostcclEventSynchronize", Resolve(nccl_handle, "hostcclEventSynchronize", &a.EventSynchronize)},
      {"hostcclStreamWaitEvent", Resolve(nccl_handle, "hostcclStreamWaitEvent", &a.StreamWaitEvent)},
      {"hostcclLaunchHostFunc", Resolve(nccl_handle, "hostcclLaunchHostFunc", &a.LaunchHostFunc)},
      {"hostcclStreamWaitValue32", Resolve(nccl_handle, "hostcclStreamWaitValue32", &a.StreamWaitValue32)},
  };
  // Newer than the rest: without them LaunchInlineFunc and StreamIsValid are unimplemented.
  Resolve(nccl_handle, "hostcclLaunchKernelFunc", &a.LaunchKernelFunc);
  Resolve(nccl_handle, "hostcclStreamCheck", &a.StreamCheck);
  for (const Entry& e : entries) {
    if (!e.ok) {
      return absl::FailedPreconditionError(
          absl::StrCat("host device backend: the NCCL library does not export ", e.symbol, " (not hostccl?)"));
    }
  }
  return std::unique_ptr<Device>(new HostDevice(a));
}

}  // namespace trirace::device
