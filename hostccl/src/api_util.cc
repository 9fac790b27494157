#include "hostccl/src/api_util.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/abseil_runtime.h"
#include "common/logging.h"
#include "nccl_adapter/nccl_result.h"
#include "hostccl/src/group.h"

namespace trirace::hostccl {
namespace {

struct Registry {
  absl::Mutex mu;
  absl::flat_hash_set<const ncclComm*> live ABSL_GUARDED_BY(mu);
  std::string last_error ABSL_GUARDED_BY(mu);
};

// Never destroyed: the API may be called from static destructors.
// Made at the first communicator (not at load, where reading the params
// would fix them before the application set them): from then on no
// lock-graph check on every lock in release builds (common/abseil_runtime.h).
Registry& Reg() {
  static auto* registry = (ConfigureAbseilRuntime(), new Registry());
  return *registry;
}

}  // namespace

ncclResult_t ApiResult(const char* func, const absl::Status& s) {
  if (s.ok()) return ncclSuccess;
  std::string text = absl::StrFormat("%s: %s", func, s.message());
  TRIRACE_WARN(INIT, "hostccl %s", text);
  {
    Registry& r = Reg();
    absl::MutexLock lock(&r.mu);
    r.last_error = text;
  }
  NoteGroupError(s);
  return ToNcclResult(s);
}

const char* LastErrorText() {
  thread_local std::string copy;
  Registry& r = Reg();
  absl::MutexLock lock(&r.mu);
  copy = r.last_error;
  return copy.c_str();
}

void RegisterComm(ncclComm* comm) {
  Registry& r = Reg();
  absl::MutexLock lock(&r.mu);
  r.live.insert(comm);
}

bool UnregisterComm(ncclComm* comm) {
  Registry& r = Reg();
  absl::MutexLock lock(&r.mu);
  return r.live.erase(comm) > 0;
}

absl::StatusOr<std::shared_ptr<CommCore>> LookupComm(const ncclComm* comm, const char* arg) {
  if (comm == nullptr) return absl::InvalidArgumentError(absl::StrFormat("%s is NULL", arg));
  Registry& r = Reg();
  absl::MutexLock lock(&r.mu);
  if (!r.live.contains(comm)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%p is not a live hostccl communicator (already destroyed or aborted, or never created)", arg,
        static_cast<const void*>(comm)));
  }
  return comm->core;
}

absl::StatusOr<std::shared_ptr<CommCore>> ReadyComm(const ncclComm* comm) {
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return core;
  ncclResult_t state = (*core)->AsyncState();
  if (state == ncclInProgress) {
    return absl::FailedPreconditionError(
        "the communicator is still initializing (nonblocking): poll ncclCommGetAsyncError until it "
        "is no longer ncclInProgress");
  }
  if (state != ncclSuccess) {
    std::string why = (*core)->AsyncMessage();
    absl::Status s = absl::UnavailableError(absl::StrFormat(
        "the communicator has an asynchronous error (%s); destroy or abort it", why));
    // Keep the code of the original failure (remote, system, internal ...).
    switch (state) {
      case ncclSystemError: return absl::UnknownError(s.message());
      case ncclInternalError: return absl::InternalError(s.message());
      case ncclInvalidArgument: return absl::InvalidArgumentError(s.message());
      case ncclInvalidUsage: return absl::FailedPreconditionError(s.message());
      default: return s;
    }
  }
  return core;
}

}  // namespace trirace::hostccl
