#include "nccl_adapter/nccl_result.h"

namespace trirace {

ncclResult_t ToNcclResult(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return ncclSuccess;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return ncclInvalidArgument;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
      return ncclInvalidUsage;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
      return ncclRemoteError;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kDataLoss:
      return ncclInternalError;
    default:
      return ncclSystemError;
  }
}

}  // namespace trirace
