#include "topology/monitors/counter_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace trirace::topo {

absl::StatusOr<CounterFile> CounterFile::Open(std::string path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError(absl::StrCat("open ", path), errno);
  return CounterFile(fd, std::move(path));
}

CounterFile::CounterFile(CounterFile&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}

CounterFile& CounterFile::operator=(CounterFile&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
  }
  return *this;
}

CounterFile::~CounterFile() { Reset(); }

void CounterFile::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

absl::StatusOr<uint64_t> CounterFile::Read() const {
  char buf[32];
  const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
  if (n < 0) return SystemError(absl::StrCat("read ", path_), errno);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(buf, buf + n, v);
  if (ec != std::errc() || end == buf) {
    return absl::DataLossError(
        absl::StrCat(path_, ": not a byte counter: '", absl::string_view(buf, static_cast<size_t>(n)), "'"));
  }
  return v;
}

}  // namespace trirace::topo
