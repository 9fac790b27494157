// CompletionTracker: learns when the device has finished an op, so a trace
// slice can end at the op's real completion instead of the call's return.
//
// Host streams (hostccl): hostcclLaunchHostFunc() after the op runs a
// callback on the stream's worker thread when the stream reaches that
// point. CUDA: not tracked in this build (slices end at the return; the
// device backends of the gated launch add CUDA events).
//
// Thread safety: Track() from any thread; callbacks arrive on stream
// threads.
#ifndef TRIRACE_INTERPOSE_COMPLETION_H_
#define TRIRACE_INTERPOSE_COMPLETION_H_

#include <memory>

#include "interpose/real_nccl.h"
#include "nccl.h"

namespace trirace::interpose {

class CompletionTracker {
 public:
  using Callback = void (*)(void* user_data);

  // A tracker for the library `real`, or nullptr when it cannot tell
  // completions (real CUDA NCCL in this build).
  static std::unique_ptr<CompletionTracker> ForLibrary(const RealNccl& real);

  // Runs cb(user_data) once `stream` has run everything enqueued on it so
  // far. False when it could not be arranged (cb will not run).
  bool Track(cudaStream_t stream, Callback cb, void* user_data) const {
    return launch_host_func_(stream, cb, user_data) == ncclSuccess;
  }

 private:
  using LaunchHostFn = ncclResult_t (*)(cudaStream_t, Callback, void*);
  explicit CompletionTracker(LaunchHostFn fn) : launch_host_func_(fn) {}
  LaunchHostFn launch_host_func_;
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMPLETION_H_
