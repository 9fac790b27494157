// TraceWriter: writes the process's timeline (TRIRACE_TRACE) in the
// background.
//
// Record() copies a TraceRecord into the bounded TraceBuffer (no lock, no
// allocation, no I/O on the caller's thread). A writer thread drains the
// buffer every 100 ms (sooner when it is half full), formats JSON
// (trace_json.h) and appends it to the file. The file is opened on the
// first write (when the path pattern has %r, the rank in the first comm,
// only once a comm exists), or at Close(). Close() writes the track names
// and the counts (records written, dropped because the buffer was full, ops
// still in flight) and closes the file; it is called at exit.
//
// An I/O failure (open, write) logs one WARN naming TRIRACE_TRACE, the path
// and the error, stops the trace and calls `on_failure` (the shim falls back
// to pure forwarding).
//
// After fork() the child has no writer thread: its Close() neither joins
// nor writes (the file is the parent's), and its records are lost.
//
// Thread safety: Record() from any thread, lock-free (the buffer is a
// lock-free queue); Wake() and Close() from any thread, Close() once.
// mutex_ guards the writer thread's wake and stop flags (its wait condition
// reads them, so releasing mutex_ after setting one wakes it); path_mutex_
// guards the opened path that path() returns.
#ifndef TRIRACE_INTERPOSE_TRACE_TRACE_WRITER_H_
#define TRIRACE_INTERPOSE_TRACE_TRACE_WRITER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>  // std::call_once
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "interpose/comm/comm_registry.h"
#include "interpose/trace/trace_buffer.h"
#include "interpose/trace/trace_json.h"

namespace trirace::interpose {

class TraceWriter {
 public:
  struct Options {
    std::string path_pattern;  // TRIRACE_TRACE, with %h %p %r
    size_t buffer_bytes = 64u << 20;
    // Extra otherData entries (NCCL version, mode, ...).
    std::vector<std::pair<std::string, std::string>> info;
    std::function<void(const std::string& why)> on_failure;
    // Ops recorded but not yet completed, reported at Close().
    std::function<uint64_t()> in_flight;
  };

  static absl::StatusOr<std::unique_ptr<TraceWriter>> Start(Options options, const CommRegistry* registry);
  ~TraceWriter();  // Close() if not closed

  // Queues one record; false if it was dropped (buffer full or closed).
  bool Record(const TraceRecord& record);
  // Asks the writer thread to drain now (e.g. when the last comm is destroyed).
  void Wake();
  // Drains, writes the footer and closes the file. Idempotent.
  void Close();

  uint64_t dropped() const { return buffer_->dropped() + late_.load(std::memory_order_relaxed); }
  // The file written to ("" until opened).
  std::string path() const;

 private:
  TraceWriter(Options options, const CommRegistry* registry, std::unique_ptr<TraceBuffer> buffer);
  void Run() ABSL_LOCKS_EXCLUDED(mutex_);
  // Drains the buffer into `pending_`; writes when large or `force`.
  void Drain(bool force);
  bool EnsureOpen(bool closing);
  void WriteOut(bool force);
  void Fail(const std::string& why);

  Options options_;
  const CommRegistry* registry_;
  std::unique_ptr<TraceBuffer> buffer_;
  TraceJson json_;
  pid_t owner_pid_;  // the process whose thread writes; a forked child does not
  std::string pending_;
  std::string path_;
  int fd_ = -1;
  uint64_t written_ = 0;
  std::atomic<bool> failed_{false};
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> late_{0};
  std::atomic<bool> wake_requested_{false};

  absl::Mutex mutex_;  // wake-ups and stop; never held by Record()
  bool stop_ ABSL_GUARDED_BY(mutex_) = false;
  bool wake_ ABSL_GUARDED_BY(mutex_) = false;
  std::once_flag close_once_;
  mutable absl::Mutex path_mutex_;
  std::string opened_path_ ABSL_GUARDED_BY(path_mutex_);
  std::thread thread_;
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_TRACE_TRACE_WRITER_H_
