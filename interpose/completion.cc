#include "interpose/completion.h"

#include <dlfcn.h>

namespace trirace::interpose {

std::unique_ptr<CompletionTracker> CompletionTracker::ForLibrary(const RealNccl& real) {
  if (!real.is_hostccl || real.handle == nullptr) return nullptr;
  void* sym = dlsym(real.handle, "hostcclLaunchHostFunc");
  if (sym == nullptr) return nullptr;
  return std::unique_ptr<CompletionTracker>(new CompletionTracker(reinterpret_cast<LaunchHostFn>(sym)));
}

}  // namespace trirace::interpose
