#include "interpose/trace/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/process_info.h"
#include "common/status.h"

namespace trirace::interpose {
namespace {

constexpr size_t kWriteBlock = 1u << 20;
constexpr absl::Duration kDrainPeriod = absl::Milliseconds(100);

int64_t WallMinusMonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const int64_t wall = static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  return wall - MonotonicNs();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Start(Options options, const CommRegistry* registry) {
  auto buffer = TraceBuffer::Create(options.buffer_bytes);
  if (!buffer.ok()) return buffer.status();
  std::unique_ptr<TraceWriter> w(new TraceWriter(std::move(options), registry, *std::move(buffer)));
  try {
    w->thread_ = std::thread([p = w.get()] { p->Run(); });
  } catch (const std::system_error& e) {
    return SystemError("cannot start the trace writer thread", e.code().value());
  }
  return w;
}

TraceWriter::TraceWriter(Options options, const CommRegistry* registry, std::unique_ptr<TraceBuffer> buffer)
    : options_(std::move(options)),
      registry_(registry),
      buffer_(std::move(buffer)),
      json_(static_cast<int>(getpid()), WallMinusMonoNs()),
      owner_pid_(getpid()) {
  pending_ = TraceJson::Header();
}

TraceWriter::~TraceWriter() { Close(); }

bool TraceWriter::Record(const TraceRecord& record) {
  if (closed_.load(std::memory_order_acquire)) {
    late_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (!buffer_->Push(record)) {
    TRIRACE_WARN_ONCE(TRACE, "TRIRACE_TRACE: the trace buffer (%d records, TRIRACE_TRACE_BUFFER_MB) is full: "
                      "events are being dropped; the count is written in the trace", buffer_->capacity());
    return false;
  }
  // Half full: wake the writer early, once until it has drained.
  if (buffer_->size() * 2 >= buffer_->capacity() && !wake_requested_.exchange(true, std::memory_order_relaxed)) {
    Wake();
  }
  return true;
}

void TraceWriter::Wake() {
  absl::MutexLock lock(&mutex_);  // releasing it wakes the writer: wake_ is in its wait condition
  wake_ = true;
}

std::string TraceWriter::path() const {
  absl::MutexLock lock(&path_mutex_);
  return opened_path_;
}

void TraceWriter::Run() {
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return stop_ || wake_; };
  mutex_.Lock();
  while (!stop_) {
    mutex_.AwaitWithTimeout(absl::Condition(&woken), kDrainPeriod);
    wake_ = false;
    mutex_.Unlock();
    wake_requested_.store(false, std::memory_order_relaxed);
    // Written out every period, so a process that dies keeps most of its trace.
    Drain(/*force=*/true);
    mutex_.Lock();
  }
  mutex_.Unlock();
}

void TraceWriter::Drain(bool force) {
  TraceRecord r;
  while (buffer_->Pop(&r)) {
    if (!failed_.load(std::memory_order_relaxed)) {
      json_.AppendRecord(r, &pending_);
      ++written_;
    }
    if (pending_.size() >= kWriteBlock) WriteOut(/*force=*/false);
  }
  WriteOut(force);
}

bool TraceWriter::EnsureOpen(bool closing) {
  if (fd_ >= 0) return true;
  if (failed_.load(std::memory_order_relaxed)) return false;
  const int rank = registry_ != nullptr ? registry_->first_rank() : -1;
  const bool wants_rank = options_.path_pattern.find("%r") != std::string::npos;
  if (wants_rank && rank < 0 && !closing) return false;  // wait for the first comm
  path_ = ExpandPathPattern(options_.path_pattern, rank >= 0 ? std::optional<int>(rank) : std::nullopt);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    Fail(std::string(
        SystemError(absl::StrCat("TRIRACE_TRACE=\"", options_.path_pattern, "\": cannot create \"", path_, "\""), errno)
            .message()));
    return false;
  }
  absl::MutexLock lock(&path_mutex_);
  opened_path_ = path_;
  return true;
}

void TraceWriter::WriteOut(bool force) {
  if (pending_.empty() || failed_.load(std::memory_order_relaxed)) return;
  if (!force && pending_.size() < kWriteBlock) return;
  if (!EnsureOpen(/*closing=*/false) && !closed_.load(std::memory_order_relaxed)) return;
  if (fd_ < 0) return;
  absl::string_view data = pending_;
  while (!data.empty()) {
    ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Fail(std::string(SystemError(absl::StrCat("TRIRACE_TRACE: writing \"", path_, "\" failed"), errno).message()));
      return;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  pending_.clear();
}

void TraceWriter::Fail(const std::string& why) {
  if (failed_.exchange(true)) return;
  pending_.clear();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  TRIRACE_WARN(TRACE, "%s; the trace is stopped", why);
  if (options_.on_failure) options_.on_failure(why);
}

void TraceWriter::Close() {
  std::call_once(close_once_, [this] {
    if (getpid() != owner_pid_) {
      // A forked child: the writer thread and the file belong to the parent.
      closed_.store(true, std::memory_order_release);
      return;
    }
    {
      absl::MutexLock lock(&mutex_);  // releasing it wakes the writer thread
      stop_ = true;
    }
    if (thread_.joinable()) thread_.join();
    closed_.store(true, std::memory_order_release);
    Drain(/*force=*/false);
    if (failed_.load()) return;
    std::vector<const CommState*> comms;
    std::string process_name = absl::StrCat(HostName(), ":", getpid());
    if (registry_ != nullptr) {
      registry_->ForEach([&](CommState& s) { comms.push_back(&s); });
      const int rank = registry_->first_rank();
      if (rank >= 0) process_name = absl::StrCat("rank ", rank, " ", process_name);
    }
    const uint64_t in_flight = options_.in_flight ? options_.in_flight() : 0;
    std::vector<std::pair<std::string, std::string>> other = options_.info;
    other.emplace_back("records", absl::StrCat(written_));
    other.emplace_back("dropped_events", absl::StrCat(buffer_->dropped()));
    other.emplace_back("incomplete_events", absl::StrCat(in_flight));
    for (const CommState* s : comms) {
      bool annotated = false;
      const int role = EffectiveRole(*s, &annotated);
      other.emplace_back(absl::StrCat("comm ", s->index),
                         absl::StrCat("id=", CommIdHex(s->id), " rank=", s->rank, "/", s->nranks,
                                      " role=", RoleName(role), annotated ? " (annotated)" : " (inferred)",
                                      " parent=", s->parent_id != 0 ? CommIdHex(s->parent_id) : "none",
                                      " created_by=", s->created_by));
    }
    json_.AppendFooter(comms, process_name, other, &pending_);
    if (!EnsureOpen(/*closing=*/true)) return;
    WriteOut(/*force=*/true);
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (buffer_->dropped() > 0 || in_flight > 0) {
      TRIRACE_WARN(TRACE, "TRIRACE_TRACE: %d events dropped (buffer full: raise TRIRACE_TRACE_BUFFER_MB) and %d ops "
                   "still in flight at exit; both counts are in \"%s\"", buffer_->dropped(), in_flight, path_);
    }
  });
}

}  // namespace trirace::interpose
