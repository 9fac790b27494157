#include "common/status.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace trirace {

absl::Status SystemError(absl::string_view what, int errnum) {
  char buf[128];
  // GNU strerror_r returns a pointer that may or may not be `buf`.
  const char* text = strerror_r(errnum, buf, sizeof(buf));
  return absl::UnknownError(absl::StrCat(what, ": ", text, " (errno ", errnum, ")"));
}

absl::Status RemoteError(absl::string_view what) { return absl::UnavailableError(what); }

absl::Status InternalError(absl::string_view what) { return absl::InternalError(what); }

}  // namespace trirace
