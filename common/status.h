// Status: the one error type inside TriRace, and its one mapping to NCCL.
//
// Every fallible function inside the project returns absl::Status or
// absl::StatusOr<T>. Codes carry meaning for the NCCL boundary:
//
//   absl code            meaning here                      ncclResult_t
//   -------------------  --------------------------------  ---------------------
//   kOk                  success                            ncclSuccess
//   kInvalidArgument,    a caller passed a bad argument     ncclInvalidArgument
//   kOutOfRange
//   kFailedPrecondition, valid arguments, wrong state or    ncclInvalidUsage
//   kUnimplemented       unsupported on this backend
//   kUnavailable,        the peer is gone or unreachable    ncclRemoteError
//   kDeadlineExceeded,   (connection closed, timed out,
//   kAborted             aborted)
//   kInternal,           a bug or broken invariant inside   ncclInternalError
//   kDataLoss            TriRace, a corrupt message
//   everything else      a local OS/resource failure        ncclSystemError
//                        (errno, ENOMEM, dlopen, shm, ...)
//
// ToNcclResult() is the only place that mapping lives; ABI layers call it
// once at the boundary. Helpers below build statuses with these codes so
// call sites say what went wrong, not which enum it maps to.
//
// Thread safety: everything here is stateless and thread-safe.
#ifndef TRIRACE_COMMON_STATUS_H_
#define TRIRACE_COMMON_STATUS_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nccl.h"

namespace trirace {

using Status = absl::Status;
template <typename T>
using StatusOr = absl::StatusOr<T>;

// The single mapping from an internal status to NCCL's result code.
ncclResult_t ToNcclResult(const absl::Status& status);

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
