#include "interpose/completion.h"

#include "common/logging.h"

namespace trirace::interpose {

std::unique_ptr<CompletionTracker> CompletionTracker::ForLibrary(const RealNccl& real) {
  absl::StatusOr<std::unique_ptr<device::Device>> dev = device::SelectDevice(real.handle);
  if (!dev.ok()) {
    TRIRACE_INFO(TRACE, "trace slices end at the call's return: %s", dev.status().ToString());
    return nullptr;
  }
  return std::unique_ptr<CompletionTracker>(new CompletionTracker(*std::move(dev)));
}

}  // namespace trirace::interpose
