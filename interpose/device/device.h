// The device interface of the gated launch: streams, events, gates, capture
// query, with two backends side by side.
//
//   cuda  the CUDA driver API through dlopen("libcuda.so.1") (cuda.cc): no
//         link-time CUDA dependency; gates are cuStreamWaitValue32 waits on
//         host-mapped words (cuMemHostAlloc DEVICEMAP).
//   host  hostccl's host streams (host.cc), resolved with dlsym on the NCCL
//         library the shim found; gates are hostcclStreamWaitValue32 waits.
// SelectDevice() picks: hostccl when the real NCCL library exports
// hostcclStreamCreate, else CUDA.
//
// The gated launch with this interface (design.md), per op:
//   dev.RecordEvent(e_in, user);          dev.StreamWaitEvent(dedicated, e_in);
//   dev.WaitGate(dedicated, gates, slot, value);
//   real ncclAllReduce(..., dedicated);   dev.RecordEvent(e_done, dedicated);
//   dev.StreamWaitEvent(user, e_done);
//   ... later, from the scheduler:  gates.Open(slot, value);
//   ... completion:                 dev.QueryEvent(e_done) == true
//
// Gates: a GateBlock is an array of 32-bit words the device can read. A wait
// for `value` on word i passes once (int32_t)(word - value) >= 0 (cyclic
// "greater or equal", CU_STREAM_WAIT_VALUE_GEQ), so a word is reused by
// waiting for ever larger values: word i's n-th use waits for n and is
// opened by storing n. Opening is a plain host store with release order; no
// device call.
//
// Handles: StreamHandle is a cudaStream_t / CUstream (the same object in
// CUDA) or a hostccl stream; EventHandle likewise. Null is the default
// stream. All errors are Status values naming the call and the driver's
// error; nothing here aborts.
//
// Thread safety: every Device method may be called from any thread (the
// drivers are thread-safe); GateBlock::Open/Value are atomic.
#ifndef TRIRACE_INTERPOSE_DEVICE_DEVICE_H_
#define TRIRACE_INTERPOSE_DEVICE_DEVICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trirace::device {

using StreamHandle = void*;
using EventHandle = void*;
using HostFn = void (*)(void* arg);

// Device-visible 32-bit gate words, all 0 initially. Freed with the block.
class GateBlock {
 public:
  virtual ~GateBlock() = default;
  GateBlock(const GateBlock&) = delete;
  GateBlock& operator=(const GateBlock&) = delete;

  size_t size() const { return size_; }
  // Opens every wait on word `index` for a value cyclically <= `value`.
  void Open(size_t index, uint32_t value) {
    std::atomic_ref<uint32_t>(words_[index]).store(value, std::memory_order_release);
  }
  uint32_t Value(size_t index) const {
    return std::atomic_ref<uint32_t>(words_[index]).load(std::memory_order_acquire);
  }
  // The host address of word `index` (what hostccl waits on).
  uint32_t* host_word(size_t index) const { return words_ + index; }
  // Zeroes every word, so a block no stream waits on any more serves as a
  // new one (a freed comm's ring goes to the next comm: freeing
  // page-locked memory on CUDA waits for the device).
  void Reset() {
    for (size_t i = 0; i < size_; ++i) std::atomic_ref<uint32_t>(words_[i]).store(0, std::memory_order_release);
  }

 protected:
  GateBlock(uint32_t* words, size_t size) : words_(words), size_(size) {}

 private:
  uint32_t* const words_;
  const size_t size_;
};

// Restores the previous current device when it goes (Device::MakeCurrent).
class CurrentDevice {
 public:
  CurrentDevice() = default;
  explicit CurrentDevice(std::function<void()> restore) : restore_(std::move(restore)) {}
  CurrentDevice(CurrentDevice&& o) noexcept : restore_(std::exchange(o.restore_, nullptr)) {}
  CurrentDevice& operator=(CurrentDevice&&) = delete;
  ~CurrentDevice() {
    if (restore_) restore_();
  }

 private:
  std::function<void()> restore_;
};

class Device {
 public:
  virtual ~Device() = default;
  // "cuda" or "host".
  virtual absl::string_view name() const = 0;

  // A stream that does not synchronise with the default stream.
  virtual absl::StatusOr<StreamHandle> CreateStream() = 0;
  virtual absl::Status DestroyStream(StreamHandle stream) = 0;

  // An event without timing.
  virtual absl::StatusOr<EventHandle> CreateEvent() = 0;
  virtual absl::Status DestroyEvent(EventHandle event) = 0;
  virtual absl::Status RecordEvent(EventHandle event, StreamHandle stream) = 0;
  // Work enqueued on `stream` later waits for the event's recorded point.
  virtual absl::Status StreamWaitEvent(StreamHandle stream, EventHandle event) = 0;
  // true when the recorded work has run, false while it is pending.
  virtual absl::StatusOr<bool> QueryEvent(EventHandle event) = 0;
  virtual absl::Status SynchronizeEvent(EventHandle event) = 0;

  // `count` gate words visible to this device (CUDA: in the calling
  // thread's current context).
  virtual absl::StatusOr<std::unique_ptr<GateBlock>> AllocateGates(size_t count) = 0;
  // Work enqueued on `stream` later waits until word `index` of `gates`
  // reaches `value` (see the header comment).
  virtual absl::Status WaitGate(StreamHandle stream, const GateBlock& gates, size_t index, uint32_t value) = 0;

  // False when the backend's library would reject `stream` (a stream the
  // application handed in: one it never made, or one already destroyed),
  // found without using it and without a warning. True where the backend
  // cannot tell without using it (CUDA reports a bad handle only when it is
  // used, if it does not crash on it), and for NULL (the default stream).
  virtual bool StreamIsValid(StreamHandle /*stream*/) { return true; }

  // True while `stream` is being captured into a graph (never for host).
  // An error means "cannot tell": the caller must not gate.
  virtual absl::StatusOr<bool> IsCapturing(StreamHandle stream) = 0;
  // Runs fn(arg) on a driver thread once `stream` reaches this point.
  virtual absl::Status LaunchHostFunc(StreamHandle stream, HostFn fn, void* arg) = 0;
  // Runs fn(arg) in stream order on the stream's own thread, taking no
  // device time: only where streams are host threads (host:
  // hostcclLaunchKernelFunc). fn must be short and never block.
  // Unimplemented where inline_funcs() is false (CUDA has no such call).
  virtual absl::Status LaunchInlineFunc(StreamHandle, HostFn, void*) {
    return absl::UnimplementedError("this device backend has no inline stream functions");
  }
  virtual bool inline_funcs() const { return false; }

  // Makes device `ordinal` the calling thread's current one until the
  // result goes (CUDA: its primary context, then the previous context
  // again), so streams and buffers made meanwhile belong to it.
  virtual absl::StatusOr<CurrentDevice> MakeCurrent(int ordinal) = 0;

  // The PCI bus id ("0000:3B:00.0") of device `ordinal`; NotFound on a
  // backend without GPUs (host), Unimplemented when the driver cannot tell.
  virtual absl::StatusOr<std::string> PciBusId(int ordinal) = 0;
};

// The CUDA backend. Fails with FailedPrecondition "no CUDA driver: ..." when
// `library` cannot be loaded, or "cuInit failed: ..." when the driver
// finds no usable device; also when a needed entry point is missing.
absl::StatusOr<std::unique_ptr<Device>> OpenCudaDevice(const char* library = "libcuda.so.1");

// True when the NCCL library behind `nccl_handle` (a dlopen handle) is
// hostccl: it exports hostcclStreamCreate.
bool IsHostccl(void* nccl_handle);
// The host backend over hostccl's stream API in `nccl_handle`.
// FailedPrecondition naming the first missing function if it is not hostccl.
absl::StatusOr<std::unique_ptr<Device>> OpenHostDevice(void* nccl_handle);

// hostccl when `nccl_handle` is hostccl, else CUDA.
absl::StatusOr<std::unique_ptr<Device>> SelectDevice(void* nccl_handle);

}  // namespace trirace::device

#endif  // TRIRACE_INTERPOSE_DEVICE_DEVICE_H_
