// The emulated device: streams, events, host functions and "compute" of a
// given duration, taken from hostccl's host-stream API.
//
// The program is written against nccl.h only and links libnccl.so.2; the
// stream API is looked up at run time with dlsym(RTLD_DEFAULT), so the same
// binary links and starts against the real NCCL too. There, compute would
// need a GPU spin kernel, which this example does not have: Load() fails
// with a message that says so, and main exits with kExitNoDevice.
//
// RAII: Stream and Event own their handles. Errors throw std::runtime_error
// naming the call (the example's error model; main reports and exits).
// Thread safety: as hostccl's (every call may come from any thread).
#ifndef EXAMPLES_HYBRID_PARALLEL_DEVICE_H_
#define EXAMPLES_HYBRID_PARALLEL_DEVICE_H_

#include <cstdint>
#include <functional>
#include <string>

#include <cuda_runtime.h>
#include <nccl.h>

#include "hostccl/stream.h"

namespace hybrid {

class Device {
 public:
  // Resolves the stream API. False with *error when it is not in the process.
  bool Load(std::string* error);

  cudaStream_t CreateStream() const;
  void DestroyStream(cudaStream_t s) const;
  void Synchronize(cudaStream_t s) const;
  cudaEvent_t CreateEvent() const;
  void DestroyEvent(cudaEvent_t e) const;
  void Record(cudaEvent_t e, cudaStream_t s) const;
  void Wait(cudaStream_t s, cudaEvent_t e) const;  // stream waits event
  void HostWait(cudaEvent_t e) const;              // host blocks on event
  // Runs fn on the stream's worker in stream order.
  void Launch(cudaStream_t s, std::function<void()> fn) const;
  // The stream is busy for `us` microseconds (0: nothing is enqueued).
  void Compute(cudaStream_t s, int64_t us) const;

 private:
  decltype(&hostcclStreamCreate) stream_create_ = nullptr;
  decltype(&hostcclStreamDestroy) stream_destroy_ = nullptr;
  decltype(&hostcclStreamSynchronize) stream_synchronize_ = nullptr;
  decltype(&hostcclEventCreate) event_create_ = nullptr;
  decltype(&hostcclEventDestroy) event_destroy_ = nullptr;
  decltype(&hostcclEventRecord) event_record_ = nullptr;
  decltype(&hostcclEventSynchronize) event_synchronize_ = nullptr;
  decltype(&hostcclStreamWaitEvent) stream_wait_event_ = nullptr;
  decltype(&hostcclLaunchKernelFunc) launch_kernel_func_ = nullptr;
  decltype(&hostcclStreamCompute) stream_compute_ = nullptr;
};

// An owned stream.
class Stream {
 public:
  explicit Stream(const Device& dev) : dev_(&dev), s_(dev.CreateStream()) {}
  ~Stream() { dev_->DestroyStream(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  const Device* dev_;
  cudaStream_t s_;
};

// An owned event.
class Event {
 public:
  explicit Event(const Device& dev) : dev_(&dev), e_(dev.CreateEvent()) {}
  ~Event() { dev_->DestroyEvent(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  const Device* dev_;
  cudaEvent_t e_;
};

// Throws std::runtime_error("<what>: <NCCL error string>") unless ncclSuccess.
void CheckNccl(ncclResult_t r, const char* what);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_DEVICE_H_
