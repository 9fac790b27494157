// The engine's public calls. Each change goes through ChangeThenPass.
#include "scheduler/engine.h"

#include <utility>

#include "common/params.h"

namespace trirace::sched {
namespace {

// Iteration period smoothing: new = old + (sample - old) / kPeriodSmoothing.
constexpr int64_t kPeriodSmoothing = 4;

}  // namespace

EngineOptions EngineOptions::FromParams() {
  EngineOptions o;
  o.max_hold_ns = ParamInt(ParamId::kMaxHoldUs) * 1000;
  o.max_hold_fraction = ParamDouble(ParamId::kMaxHoldFraction);
  o.occupancy_period_ns = ParamInt(ParamId::kOccupancyPeriodUs) * 1000;
  o.tuning = WindowTunerConfig::FromParams();
  return o;
}

Engine::Engine(std::unique_ptr<Policy> policy, GateOpener* opener, EngineOptions options)
    : options_(options),
      policy_(std::move(policy)),
      opener_(opener),
      tuner_(options.tuning),
      poll_interval_ns_(options.min_poll_ns) {
  hold_bound_ns_.store(options_.max_hold_ns, std::memory_order_relaxed);
  if (options_.start_thread) {
    thread_ = std::thread([this] { ThreadMain(); });
    thread_handle_ = thread_.native_handle();
    have_thread_ = true;
  }
}

Engine::~Engine() { Stop(); }

void Engine::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    wake_requested_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  std::vector<ReleasedTask> released;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = options_.clock->NowNs();
    std::vector<const Task*> held = pending_;
    for (const Task* t : held) ReleaseLocked(tasks_.at(t->id).get(), ReleaseReason::kShutdown, now, &released);
    pending_.clear();
  }
  Open(released);
}

LinkId Engine::AddLink(const LinkSpec& spec) {
  absl::MutexLock lock(&mu_);
  return links_.Add(spec);
}

void Engine::SetCompletionPoller(CompletionPoller* poller) {
  absl::MutexLock step(&step_mu_);
  absl::MutexLock lock(&mu_);
  poller_ = poller;
}

void Engine::SetOccupancyReader(std::unique_ptr<OccupancyReader> reader,
                                std::vector<std::pair<std::string, LinkId>> device_links) {
  absl::MutexLock step(&step_mu_);
  const bool sampling = reader != nullptr;
  sampler_.SetReader(std::move(reader), std::move(device_links));
  absl::MutexLock lock(&mu_);
  sampling_ = sampling;
  next_sample_ns_ = 0;  // the first sample is due at once
}

void Engine::ChangeThenPass(absl::FunctionRef<bool(int64_t now, std::vector<ReleasedTask>* released)> change) {
  std::vector<ReleasedTask> released;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = options_.clock->NowNs();
    ObserveLinksLocked(now);
    if (change(now, &released) && !stopped_) {
      PassLocked(now, &released);
      MaybeWakeThreadLocked(now);
    }
  }
  Open(released);
}

TaskId Engine::Submit(TaskSpec spec, TaskId reserved_id) {
  TaskId id = reserved_id != 0 ? reserved_id : ReserveId();
  ChangeThenPass([&](int64_t now, std::vector<ReleasedTask>* released) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Task* t = AddTaskLocked(id, std::move(spec), now);
    id = t->id;
    if (stopped_ && t->state == TaskState::kPending) {
      ReleaseLocked(t, ReleaseReason::kShutdown, now, released);
      std::erase(pending_, t);
    }
    return true;
  });
  return id;
}

absl::Status Engine::Complete(TaskId id, int64_t started_ns) {
  absl::Status status;
  ChangeThenPass([&](int64_t now, std::vector<ReleasedTask>*) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    status = CompleteLocked(id, now, started_ns);
    return status.ok();
  });
  return status;
}

void Engine::ReportOccupancy(LinkId link, double measured_bytes_per_s, double ours_bytes_per_s,
                             int64_t others_urgent_bytes) {
  ChangeThenPass([&](int64_t now, std::vector<ReleasedTask>*) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    links_.ApplyRate(link, measured_bytes_per_s, ours_bytes_per_s, now, others_urgent_bytes);
    ++stats_.occupancy_samples;
    return true;
  });
}

void Engine::BeginIteration(int64_t iteration) {
  ChangeThenPass([&](int64_t now, std::vector<ReleasedTask>*) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (iteration_.start_ns >= 0 && iteration > iteration_.current) {
      const int64_t sample = (now - iteration_.start_ns) / (iteration - iteration_.current);
      iteration_.period_ns = iteration_.period_ns == 0
                                 ? sample
                                 : iteration_.period_ns + (sample - iteration_.period_ns) / kPeriodSmoothing;
    }
    iteration_.current = iteration;
    iteration_.start_ns = now;
    if (options_.max_hold_ns > 0 && options_.max_hold_fraction > 0 && iteration_.period_ns > 0) {
      const auto share = static_cast<int64_t>(options_.max_hold_fraction * static_cast<double>(iteration_.period_ns));
      hold_bound_ns_.store(std::max(options_.max_hold_ns, share), std::memory_order_relaxed);
    }
    return true;
  });
}

void Engine::SetTuningListener(std::function<void(const TuningChange&)> listener) {
  absl::MutexLock lock(&mu_);
  tuning_listener_ = std::move(listener);
}

void Engine::Open(const std::vector<ReleasedTask>& released) {
  for (const ReleasedTask& r : released) opener_->OpenGate(r);
}

size_t Engine::pending_count() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

size_t Engine::running_count() const {
  absl::MutexLock lock(&mu_);
  return running_.size();
}

}  // namespace trirace::sched
