#include "interpose/metrics/metrics_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/process_info.h"

namespace trirace::interpose {

absl::StatusOr<std::unique_ptr<MetricsFile>> MetricsFile::Start(Options options) {
  if (options.path_pattern.empty()) return absl::InvalidArgumentError("TRIRACE_METRICS_FILE is empty");
  if (!(options.period > absl::ZeroDuration())) {
    return absl::InvalidArgumentError("TRIRACE_METRICS_PERIOD_S: expected a period > 0");
  }
  if (!options.snapshot) return absl::InvalidArgumentError("metrics: no snapshot function");
  std::unique_ptr<MetricsFile> m(new MetricsFile(std::move(options)));
  m->thread_ = std::thread([raw = m.get()] { raw->Run(); });
  return m;
}

MetricsFile::~MetricsFile() { Stop(); }

void MetricsFile::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  WriteOnce();
}

std::string MetricsFile::path() const {
  absl::MutexLock lock(&mu_);
  return path_;
}

uint64_t MetricsFile::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

void MetricsFile::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_ && !failed_) {
    // Wakes at the period, or at once when Stop() is called.
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.period)) break;
    mu_.Unlock();
    WriteOnce();
    mu_.Lock();
  }
}

bool MetricsFile::WriteOnce() {
  absl::MutexLock write_lock(&write_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (failed_) return false;
  }
  const std::optional<int> rank = options_.rank ? options_.rank() : std::nullopt;
  if (options_.path_pattern.find("%r") != std::string::npos && !rank) return true;  // no rank yet: later
  const std::string path = ExpandPathPattern(options_.path_pattern, rank);
  MetricsSnapshot snapshot = options_.snapshot();
  snapshot.rank = rank;
  {
    absl::MutexLock lock(&mu_);
    snapshot.writes = writes_ + 1;
  }
  const std::string text = PrometheusText(snapshot);
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  std::string error;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = absl::StrCat("cannot create \"", tmp, "\": ", std::strerror(errno));
  } else {
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = absl::StrCat("writing \"", tmp, "\" failed: ", std::strerror(errno));
        break;
      }
      done += size_t(n);
    }
    if (::close(fd) != 0 && error.empty()) error = absl::StrCat("closing \"", tmp, "\" failed: ", std::strerror(errno));
    if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) {
      error = absl::StrCat("cannot rename \"", tmp, "\" to \"", path, "\": ", std::strerror(errno));
    }
    if (!error.empty()) ::unlink(tmp.c_str());
  }
  absl::MutexLock lock(&mu_);
  if (!error.empty()) {
    failed_ = true;
    TRIRACE_WARN(TRACE, "TRIRACE_METRICS_FILE=\"%s\": %s; no more metrics are written (the job goes on)",
                 options_.path_pattern, error);
    return false;
  }
  ++writes_;
  path_ = path;
  return true;
}

}  // namespace trirace::interpose
