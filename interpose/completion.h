// CompletionTracker: learns when the device has finished an op, so a trace
// slice can end at the op's real completion instead of the call's return.
// It queues a host function after the op on the op's stream, through the
// device backend the gated launch uses too (interpose/device/): hostccl's
// hostcclLaunchHostFunc on host streams, cuLaunchHostFunc on CUDA.
//
// Without a usable backend (no CUDA driver, or cuInit fails) there is no
// tracker and slices end at the call's return, as the trace's "completion"
// field says.
//
// Thread safety: Track() from any thread; callbacks arrive on stream
// (hostccl) or CUDA driver threads.
#ifndef TRIRACE_INTERPOSE_COMPLETION_H_
#define TRIRACE_INTERPOSE_COMPLETION_H_

#include <memory>

#include "interpose/device/device.h"
#include "interpose/real_nccl.h"
#include "nccl.h"

namespace trirace::interpose {

class CompletionTracker {
 public:
  using Callback = device::HostFn;

  // A tracker for the library `real`, or nullptr when no device backend
  // opens for it.
  static std::unique_ptr<CompletionTracker> ForLibrary(const RealNccl& real);

  // Runs cb(user_data) once `stream` has run everything enqueued on it so
  // far. False when it could not be arranged (cb will not run).
  bool Track(cudaStream_t stream, Callback cb, void* user_data) const {
    return dev_->LaunchHostFunc(stream, cb, user_data).ok();
  }

  absl::string_view device_name() const { return dev_->name(); }

 private:
  explicit CompletionTracker(std::unique_ptr<device::Device> dev) : dev_(std::move(dev)) {}
  const std::unique_ptr<device::Device> dev_;
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMPLETION_H_
