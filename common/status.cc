#include "common/status.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

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

absl::Status SystemError(absl::string_view what, int errnum) {
  char buf[128];
  // GNU strerror_r returns a pointer that may or may not be `buf`.
  const char* text = strerror_r(errnum, buf, sizeof(buf));
  return absl::UnknownError(absl::StrCat(what, ": ", text, " (errno ", errnum, ")"));
}

absl::Status RemoteError(absl::string_view what) { return absl::UnavailableError(what); }

absl::Status InternalError(absl::string_view what) { return absl::InternalError(what); }

}  // namespace trirace
