// Status: the one error type inside TriRace.
//
// Every fallible function inside the project returns absl::Status or
// absl::StatusOr<T>. The codes carry meaning at the NCCL boundary, where
// nccl_adapter/nccl_result.h maps them to ncclResult_t (the table is there):
// a bad argument is kInvalidArgument, a wrong state kFailedPrecondition, a
// peer that is gone kUnavailable, a broken invariant kInternal, a local OS
// failure anything else (SystemError below gives kUnknown). The helpers
// below build statuses with these codes so call sites say what went wrong,
// not which enum it maps to.
//
// Thread safety: everything here is stateless and thread-safe.
#ifndef TRIRACE_COMMON_STATUS_H_
#define TRIRACE_COMMON_STATUS_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trirace {

using Status = absl::Status;
template <typename T>
using StatusOr = absl::StatusOr<T>;

// A local OS failure: `what` plus strerror(errnum). Maps to ncclSystemError.
absl::Status SystemError(absl::string_view what, int errnum);
// The remote side is gone (EOF, reset, timeout). Maps to ncclRemoteError.
absl::Status RemoteError(absl::string_view what);
// A broken invariant or corrupt message. Maps to ncclInternalError.
absl::Status InternalError(absl::string_view what);

}  // namespace trirace

// Returns from the enclosing function when `expr` (an absl::Status) fails.
#define TRIRACE_RETURN_IF_ERROR(expr)            \
  do {                                           \
    ::absl::Status _trirace_status = (expr);     \
    if (!_trirace_status.ok()) return _trirace_status; \
  } while (0)

#endif  // TRIRACE_COMMON_STATUS_H_
