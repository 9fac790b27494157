// MetricsFile: writes the process's metrics (metrics_text.h) to
// TRIRACE_METRICS_FILE every TRIRACE_METRICS_PERIOD_S, and once more when it
// stops (at exit), from a thread of its own.
//
// Each write goes to "<file>.tmp.<pid>" in the same folder, then rename()s
// over the file, so a reader (node_exporter's textfile collector) sees the
// old file or the new one, never a part. The path expands %h, %p and %r
// (the rank in the first comm: a pattern with %r waits for it, as
// TRIRACE_TRACE does). A write that fails logs one WARN naming
// TRIRACE_METRICS_FILE, the path and the error, and the metrics stop; the
// job and the rest of the shim go on.
//
//   MetricsFile::Options o{.path_pattern = "/var/lib/node_exporter/trirace.%r.prom",
//                          .period = absl::Seconds(10), .snapshot = ..., .rank = ...};
//   absl::StatusOr<std::unique_ptr<MetricsFile>> m = MetricsFile::Start(std::move(o));
//   ...
//   (*m)->Stop();  // the last write; also on destruction
//
// Thread safety: Stop may be called from any thread, once or more. The
// snapshot function runs on the writer's thread only.
#ifndef TRIRACE_INTERPOSE_METRICS_METRICS_FILE_H_
#define TRIRACE_INTERPOSE_METRICS_METRICS_FILE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "interpose/metrics/metrics_text.h"

namespace trirace::interpose {

class MetricsFile {
 public:
  struct Options {
    std::string path_pattern;
    absl::Duration period = absl::Seconds(10);
    std::function<MetricsSnapshot()> snapshot;
    std::function<std::optional<int>()> rank;  // for %r; nullopt until known
  };

  // InvalidArgument for an empty pattern, a period not > 0 or no snapshot.
  static absl::StatusOr<std::unique_ptr<MetricsFile>> Start(Options options);
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  // Writes once more (when %r can be expanded) and joins the thread.
  void Stop();
  // The path written last ("" before the first write).
  std::string path() const;
  uint64_t writes() const;

 private:
  explicit MetricsFile(Options options) : options_(std::move(options)) {}
  void Run();
  // One write; false when the metrics stop (a failure, warned).
  bool WriteOnce();

  Options options_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  std::string path_ ABSL_GUARDED_BY(mu_);
  uint64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex write_mu_;  // one write at a time (the thread's, Stop's last)
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_METRICS_METRICS_FILE_H_
