// The one mapping from TriRace's internal status (common/status.h) to
// NCCL's result code, used once at each ABI boundary (the net plugin's
// tables, hostccl's API, the shim's wrappers).
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
// Thread safety: stateless.
#ifndef TRIRACE_NCCL_ADAPTER_NCCL_RESULT_H_
#define TRIRACE_NCCL_ADAPTER_NCCL_RESULT_H_

#include "absl/status/status.h"
#include "common/status.h"
#include "nccl.h"

namespace trirace {

ncclResult_t ToNcclResult(const absl::Status& status);

}  // namespace trirace

#endif  // TRIRACE_NCCL_ADAPTER_NCCL_RESULT_H_
