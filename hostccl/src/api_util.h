// Helpers for the exported C functions: the one place a Status becomes an
// ncclResult_t (with the WARN NCCL would print and the text
// ncclGetLastError returns), the live-communicator table, and the export
// macros.
//
// Thread safety: all functions are thread-safe.
#ifndef TRIRACE_HOSTCCL_SRC_API_UTIL_H_
#define TRIRACE_HOSTCCL_SRC_API_UTIL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/export.h"
#include "hostccl/src/comm.h"
#include "nccl.h"

// Defines the weak ncclX alias of the strong pncclX (as libnccl does).
#define HOSTCCL_WEAK_ALIAS(name) \
  extern "C" __attribute__((weak, alias("p" #name), visibility("default"))) decltype(p##name) name;

namespace trirace::hostccl {

// ncclSuccess for OK; otherwise logs "func: message" at WARN, remembers it
// for ncclGetLastError, notes it for the current group, and maps the code.
ncclResult_t ApiResult(const char* func, const absl::Status& s);
// The text of the last error reported by ApiResult (thread-safe copy).
const char* LastErrorText();

void RegisterComm(ncclComm* comm);
// False when `comm` is not live.
bool UnregisterComm(ncclComm* comm);
// The core of a live communicator; InvalidArgument naming `arg` otherwise.
absl::StatusOr<std::shared_ptr<CommCore>> LookupComm(const ncclComm* comm, const char* arg = "comm");
// LookupComm plus the state check every operation makes: a communicator
// still initialising is InvalidUsage, one in error returns that error.
absl::StatusOr<std::shared_ptr<CommCore>> ReadyComm(const ncclComm* comm);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_API_UTIL_H_
