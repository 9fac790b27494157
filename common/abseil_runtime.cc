#include "common/abseil_runtime.h"

#include "absl/synchronization/mutex.h"
#include "common/params.h"

namespace trirace {

bool ConfigureAbseilRuntime() {
#ifdef NDEBUG
  if (ParamBool(ParamId::kAbslDeadlockCheck)) return false;
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
#else
  return false;
#endif
}

}  // namespace trirace
