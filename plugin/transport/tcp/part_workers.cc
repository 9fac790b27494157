#include "plugin/transport/tcp/part_workers.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "plugin/transport/tcp/peer_liveness.h"

namespace trirace::net::tcp {
namespace {

constexpr int kSliceMs = 100;  // how often a blocked thread checks for stop / stall

absl::Status SocketError(absl::string_view what, int err) {
  if (err == EPIPE || err == ECONNRESET || err == ETIMEDOUT || err == ENOTCONN || err == ESHUTDOWN) {
    return RemoteError(absl::StrCat(what, ": peer lost (", strerror(err), ")"));
  }
  return SystemError(what, err);
}

}  // namespace

PartWorkers::PartWorkers(std::vector<int> fds, int nthreads, bool sending, int timeout_ms,
                         FailureFn on_failure)
    : fds_(std::move(fds)),
      nthreads_(std::max(1, std::min<int>(nthreads, static_cast<int>(fds_.size())))),
      sending_(sending),
      timeout_ms_(timeout_ms),
      on_failure_(std::move(on_failure)),
      queues_(nthreads_),
      stats_(nthreads_) {}

PartWorkers::~PartWorkers() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;  // releasing mu_ wakes the threads waiting for parts
    threads.swap(threads_);  // no Enqueue can start more: stop_ is set
  }
  stopping_.store(true);
  if (!threads.empty()) {
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);  // unblocks a thread inside send/recv
  }
  for (std::thread& t : threads) t.join();
  if (!threads.empty()) LogStats(stats_);
}

void PartWorkers::LogStats(const std::vector<ThreadStats>& stats) const {
  if (!log::Enabled(LogLevel::kTRACE, Subsys::kNET)) return;
  std::string line;
  for (size_t t = 0; t < stats.size(); ++t) {
    const ThreadStats& s = stats[t];
    double life = static_cast<double>(std::max<int64_t>(1, s.end_ns - s.start_ns));
    absl::StrAppendFormat(&line, "%s thread %d: %d parts, waiting for a part %.0f%%, moving %.0f%%",
                          t == 0 ? "" : ";", static_cast<int>(t), s.parts, 100.0 * s.waiting_ns / life,
                          100.0 * s.moving_ns / life);
  }
  TRIRACE_TRACE(NET, "%s comm closed:%s", sending_ ? "send" : "receive", line);
}

absl::Status PartWorkers::Start() {
  timeval slice{0, kSliceMs * 1000};
  for (int fd : fds_) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof(slice)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &slice, sizeof(slice)) != 0) {
      return SystemError("configuring a data socket", errno);
    }
  }
  try {
    for (int t = 0; t < nthreads_; ++t) threads_.emplace_back(&PartWorkers::Run, this, t);
  } catch (const std::system_error& e) {
    stop_ = true;
    return SystemError("starting a progress thread", e.code().value());
  }
  return absl::OkStatus();
}

absl::Status PartWorkers::Enqueue(int socket, PartTask task) {
  if (socket < 0 || socket >= num_sockets()) {
    return InternalError(absl::StrCat("part for data socket ", socket, " of ", num_sockets()));
  }
  absl::MutexLock lock(&mu_);  // unlocking wakes the thread that waits for this queue
  if (stop_) return InternalError("part queued on a stopped comm");
  if (threads_.empty()) TRIRACE_RETURN_IF_ERROR(Start());
  queues_[socket % nthreads_].push_back(Queued{socket, task});
  return absl::OkStatus();
}

void PartWorkers::Fail(absl::Status status) {
  if (!failed_.exchange(true)) on_failure_(std::move(status));
}

absl::Status PartWorkers::MovePart(const Queued& q) {
  const int fd = fds_[q.socket];
  uint64_t done = 0;
  int64_t last_progress = MonotonicNs();
  while (done < q.task.len) {
    uint64_t want = q.task.len - done;
    ssize_t r = sending_ ? ::send(fd, q.task.ptr + done, want, MSG_NOSIGNAL)
                         : ::recv(fd, q.task.ptr + done, want, MSG_WAITALL);
    if (stopping_.load(std::memory_order_relaxed)) return absl::CancelledError("comm closed");
    if (r > 0) {
      done += static_cast<uint64_t>(r);
      last_progress = MonotonicNs();
      continue;
    }
    if (r == 0 && !sending_) {
      return RemoteError(absl::StrCat("data socket ", q.socket + 1,
                                      ": peer closed the connection mid-message"));
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      // A part that stalls fails only when the peer's host stops answering:
      // a peer that is only stopped (or slow to post) is waited for.
      if (MonotonicNs() - last_progress > int64_t{timeout_ms_} * 1000000) {
        TRIRACE_RETURN_IF_ERROR(PeerAnswers(fd, timeout_ms_, absl::StrCat("data socket ", q.socket + 1)));
      }
      continue;
    }
    return SocketError(absl::StrCat(sending_ ? "send" : "recv", " on data socket ", q.socket + 1),
                       r < 0 ? errno : EPIPE);
  }
  return absl::OkStatus();
}

// Takes the front part of its queue (leaving it queued), moves it without
// the lock, then pops it; exits on stop_ or on an error.
void PartWorkers::Run(int thread_index) {
  auto ready = [this, thread_index]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stop_ || !queues_[thread_index].empty();
  };
  ThreadStats& stats = stats_[thread_index];
  stats.start_ns = MonotonicNs();
  int64_t now = stats.start_ns;
  while (true) {
    Queued q;
    {
      absl::MutexLock lock(&mu_, absl::Condition(&ready));  // waits until ready() holds
      if (stop_) break;
      q = queues_[thread_index].front();
    }
    const int64_t queued = MonotonicNs();
    stats.waiting_ns += queued - now;
    absl::Status st = MovePart(q);
    now = MonotonicNs();
    stats.moving_ns += now - queued;
    if (!st.ok()) {
      if (!absl::IsCancelled(st)) Fail(std::move(st));
      break;
    }
    ++stats.parts;
    q.task.parts_left->fetch_sub(1, std::memory_order_release);
    absl::MutexLock lock(&mu_);
    queues_[thread_index].pop_front();
  }
  stats.end_ns = MonotonicNs();
}

}  // namespace trirace::net::tcp
