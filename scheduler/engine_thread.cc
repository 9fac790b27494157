// The engine thread: Step (poll completions, sample occupancy, pass), the
// adaptive sleep between steps, and the wake-ups callers request.
#include <time.h>

#include <algorithm>
#include <chrono>

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
    wake = std::min(wake, pending_.front()->enqueue_ns + options_.max_hold_ns);
    if (sampler_.has_reader()) wake = std::min(wake, std::max(sampler_.next_sample_ns(), now));
  }
  if (poller_ != nullptr && !running_.empty()) wake = std::min(wake, now + poll_interval_ns_);
  return wake;
}

void Engine::MaybeWakeThreadLocked(int64_t now) {
  if (!have_thread_) return;
  if (thread_awake_) {
    wake_requested_ = true;  // it recomputes its sleep before sleeping
    return;
  }
  if (WantedWakeLocked(now) < sleeping_until_ns_) {
    wake_requested_ = true;
    cv_.notify_one();
  }
}

void Engine::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_requested_ = true;
  }
  cv_.notify_one();
}

int64_t Engine::Step() {
  std::lock_guard<std::mutex> step(step_mu_);
  std::vector<TaskId> done;
  CompletionPoller* poller;
  bool poll, sample;
  {
    std::lock_guard<std::mutex> lock(mu_);
    poller = poller_;
    poll = poller != nullptr && !running_.empty();
    sample = !pending_.empty() && sampler_.Due(options_.clock->NowNs());
  }
  // Without the state lock: the poller and the reader may take their time.
  if (poll) poller->PollCompletions(&done);
  std::vector<LinkRate> rates;
  if (sample) rates = sampler_.Sample();
  std::vector<ReleasedTask> released;
  int64_t wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = options_.clock->NowNs();
    if (poll) ++stats_.polls;
    for (TaskId id : done) CompleteLocked(id).IgnoreError();  // already completed via Complete()
    if (sample) {
      sampler_.Taken(now, options_.occupancy_period_ns);
      ++stats_.occupancy_samples;
      for (const LinkRate& r : rates) links_.ApplyRate(r.link, r.bytes_per_s, r.ours_bytes_per_s, now);
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
    std::unique_lock<std::mutex> lock(mu_);
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
    auto woken = [this] { return wake_requested_ || stopped_; };
    if (wake == kNeverNs) {
      cv_.wait(lock, woken);
    } else {
      const int64_t delta = wake - options_.clock->NowNs();
      if (delta > 0) cv_.wait_for(lock, std::chrono::nanoseconds(delta), woken);
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
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s = stats_;
  clockid_t cid;
  // The thread exits only after seeing stopped_ (under mu_), so it is alive here.
  if (have_thread_ && !stopped_ && pthread_getcpuclockid(thread_handle_, &cid) == 0) {
    s.thread_cpu_ns = ThreadCpuNs(cid);
  }
  return s;
}

}  // namespace trirace::sched
