// The engine thread: Step (poll completions, sample occupancy, pass), the
// adaptive sleep between steps, and the wake-ups callers request.
#include <time.h>

#include <algorithm>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "scheduler/engine.h"

namespace trirace::sched {
namespace {

int64_t ThreadCpuNs(clockid_t cid) {
  timespec ts{};
  return clock_gettime(cid, &ts) == 0 ? ts.tv_sec * 1'000'000'000LL + ts.tv_nsec : 0;
}

}  // namespace

int64_t Engine::WantedWakeLocked(int64_t now) const {
  int64_t wake = policy_wake_ns_;
  if (!pending_.empty()) {
    wake = std::min(wake, pending_.front()->enqueue_ns + hold_bound_ns());
    if (sampling_) wake = std::min(wake, std::max(next_sample_ns_, now));
  }
  if (poller_ != nullptr && !running_.empty()) wake = std::min(wake, now + poll_interval_ns_);
  return wake;
}

int64_t Engine::WantedWakeNs() const {
  absl::MutexLock lock(&mu_);
  return WantedWakeLocked(options_.clock->NowNs());
}

void Engine::MaybeWakeThreadLocked(int64_t now) {
  if (!have_thread_) return;
  if (thread_awake_) {
    wake_requested_ = true;  // it recomputes its sleep before sleeping
    return;
  }
  if (WantedWakeLocked(now) < sleeping_until_ns_) {
    wake_requested_ = true;
    cv_.Signal();
  }
}

void Engine::Kick() {
  absl::MutexLock lock(&mu_);
  wake_requested_ = true;
  cv_.Signal();
}

int64_t Engine::Step() {
  absl::MutexLock step(&step_mu_);
  std::vector<TaskId> done;
  CompletionPoller* poller;
  bool poll, sample;
  {
    absl::MutexLock lock(&mu_);
    poller = poller_;
    poll = poller != nullptr && !running_.empty();
    sample = sampling_ && !pending_.empty() && options_.clock->NowNs() >= next_sample_ns_;
  }
  // Without the state lock: the poller and the reader may take their time.
  if (poll) poller->PollCompletions(&done);
  std::vector<LinkRate> rates;
  if (sample) rates = sampler_.Sample();
  std::vector<ReleasedTask> released;
  int64_t wake;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = options_.clock->NowNs();
    if (poll) ++stats_.polls;
    ObserveLinksLocked(now);
    for (TaskId id : done) CompleteLocked(id, now, -1).IgnoreError();  // already completed via Complete()
    if (sample) {
      next_sample_ns_ = now + options_.occupancy_period_ns;
      ++stats_.occupancy_samples;
      for (const LinkRate& r : rates) {
        links_.ApplyRate(r.link, r.bytes_per_s, r.ours_bytes_per_s, now, r.others_urgent_bytes);
      }
    }
    if (!stopped_) PassLocked(now, &released);
    if (activity_ || !released.empty()) {
      poll_interval_ns_ = options_.min_poll_ns;
    } else if (poll) {
      poll_interval_ns_ = std::min(poll_interval_ns_ * 2, options_.max_poll_ns);
    }
    activity_ = false;
    wake = WantedWakeLocked(now);
  }
  Open(released);
  return wake;
}

void Engine::ThreadMain() {
  while (true) {
    const int64_t wake = Step();
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      stats_.thread_cpu_ns = ThreadCpuNs(CLOCK_THREAD_CPUTIME_ID);  // the figure outlives the thread
      break;
    }
    if (wake_requested_) {
      wake_requested_ = false;
      continue;
    }
    thread_awake_ = false;
    sleeping_until_ns_ = wake;
    if (wake == kNeverNs) {
      while (!wake_requested_ && !stopped_) cv_.Wait(&mu_);
    } else {
      const int64_t delta = wake - options_.clock->NowNs();
      const absl::Time deadline = absl::Now() + absl::Nanoseconds(delta);
      while (delta > 0 && !wake_requested_ && !stopped_) {
        if (cv_.WaitWithDeadline(&mu_, deadline)) break;  // timed out
      }
    }
    thread_awake_ = true;
    sleeping_until_ns_ = kNeverNs;
    wake_requested_ = false;
    ++stats_.wakeups;
    if (stopped_) {
      stats_.thread_cpu_ns = ThreadCpuNs(CLOCK_THREAD_CPUTIME_ID);
      break;
    }
  }
}

EngineStats Engine::stats() const {
  absl::MutexLock lock(&mu_);
  EngineStats s = stats_;
  clockid_t cid;
  // The thread exits only after seeing stopped_ (under mu_), so it is alive here.
  if (have_thread_ && !stopped_ && pthread_getcpuclockid(thread_handle_, &cid) == 0) {
    s.thread_cpu_ns = ThreadCpuNs(cid);
  }
  return s;
}

}  // namespace trirace::sched
