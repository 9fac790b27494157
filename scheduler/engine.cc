#include "scheduler/engine.h"

#include <time.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/params.h"

namespace trirace::sched {
namespace {

// A pass that keeps releasing is repeated at most this many times (each
// repeat releases at least one task, so this only bounds pathological
// policies that release one task per pass).
constexpr int kMaxRoundsPerPass = 64;
// Iteration period smoothing: new = old + (sample - old) / kPeriodSmoothing.
constexpr int64_t kPeriodSmoothing = 4;

}  // namespace

EngineOptions EngineOptions::FromParams() {
  EngineOptions o;
  o.max_hold_ns = ParamInt(ParamId::kMaxHoldUs) * 1000;
  o.occupancy_period_ns = ParamInt(ParamId::kOccupancyPeriodUs) * 1000;
  return o;
}

Engine::Engine(std::unique_ptr<Policy> policy, GateOpener* opener, EngineOptions options)
    : options_(options), policy_(std::move(policy)), opener_(opener), poll_interval_ns_(options.min_poll_ns) {
  if (options_.start_thread) {
    thread_ = std::thread([this] { ThreadMain(); });
    thread_handle_ = thread_.native_handle();
    have_thread_ = true;
  }
}

Engine::~Engine() { Stop(); }

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    wake_requested_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<ReleasedTask> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = options_.clock->NowNs();
    std::vector<const Task*> held = pending_;
    for (const Task* t : held) ReleaseLocked(tasks_.at(t->id).get(), ReleaseReason::kShutdown, now, &released);
    pending_.clear();
  }
  Open(released);
}

LinkId Engine::AddLink(const LinkSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  Link link;
  link.state.id = static_cast<LinkId>(links_.size());
  link.state.name = spec.name;
  link.state.capacity_bytes_per_s = spec.capacity_bytes_per_s;
  links_.push_back(std::move(link));
  return links_.back().state.id;
}

void Engine::SetCompletionPoller(CompletionPoller* poller) {
  std::lock_guard<std::mutex> step(step_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  poller_ = poller;
}

void Engine::SetOccupancyReader(std::unique_ptr<OccupancyReader> reader,
                                std::vector<std::pair<std::string, LinkId>> device_links) {
  std::lock_guard<std::mutex> step(step_mu_);
  reader_ = std::move(reader);
  meter_ = RateMeter();
  std::lock_guard<std::mutex> lock(mu_);
  device_links_ = std::move(device_links);
  next_sample_ns_ = 0;
}

void Engine::AccountLinksLocked(const Task& task, int delta_pending, int delta_running, int64_t delta_bytes) {
  const int c = ClassIndex(task.traffic_class());
  for (LinkId id : task.spec.links) {
    if (id >= links_.size()) continue;
    LinkState& s = links_[id].state;
    s.pending[c] += delta_pending;
    s.running[c] += delta_running;
    s.inflight_bytes[c] += delta_bytes;
    if (delta_running > 0) links_[id].busy_since_sample = true;
  }
  inflight_[c] += delta_bytes;
}

TaskId Engine::Submit(TaskSpec spec, TaskId reserved_id) {
  std::vector<ReleasedTask> released;
  TaskId id = reserved_id != 0 ? reserved_id : ReserveId();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = options_.clock->NowNs();
    auto owned = std::make_unique<Task>();
    Task* t = owned.get();
    t->id = id;
    t->spec = std::move(spec);
    // Unknown links are dropped here, so accounting on release and
    // completion always touches the same links.
    std::erase_if(t->spec.links, [this](LinkId l) { return l >= links_.size(); });
    t->enqueue_ns = now;
    t->submit_seq = submit_seq_++;
    t->comm_seq = comm_seq_[t->spec.comm]++;
    if (!tasks_.try_emplace(id, std::move(owned)).second) {  // leaves `owned` alone on failure
      // A reserved id submitted twice is a launcher bug; keep both tasks.
      TRIRACE_WARN_ONCE(SCHED, "scheduler: task id %d submitted twice; using a new id", id);
      t->id = id = ReserveId();
      tasks_.try_emplace(id, std::move(owned));
    }
    ++stats_.submitted;
    activity_ = true;
    if (!t->spec.gated) {
      t->state = TaskState::kRunning;
      t->reason = ReleaseReason::kUngated;
      t->release_ns = now;
      running_.push_back(t);
      AccountLinksLocked(*t, 0, 1, static_cast<int64_t>(t->spec.bytes));
    } else {
      pending_.push_back(t);
      std::deque<Task*>& q = comm_pending_[t->spec.comm];
      q.push_back(t);
      t->comm_head = q.size() == 1;
      AccountLinksLocked(*t, 1, 0, 0);
      if (stopped_) {
        ReleaseLocked(t, ReleaseReason::kShutdown, now, &released);
        std::erase(pending_, t);
      }
    }
    if (!stopped_) {
      PassLocked(now, &released);
      MaybeWakeThreadLocked(now);
    }
  }
  Open(released);
  return id;
}

absl::Status Engine::CompleteLocked(TaskId id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return absl::NotFoundError(absl::StrCat("scheduler: Complete(", id, "): no such task"));
  Task* t = it->second.get();
  if (t->state == TaskState::kPending) {
    return absl::FailedPreconditionError(
        absl::StrCat("scheduler: Complete(", id, "): the task's gate is still closed"));
  }
  AccountLinksLocked(*t, 0, -1, -static_cast<int64_t>(t->spec.bytes));
  auto r = std::find(running_.begin(), running_.end(), t);
  if (r != running_.end()) running_.erase(r);
  policy_->OnTaskDone(id);
  tasks_.erase(it);
  ++stats_.completed;
  activity_ = true;
  return absl::OkStatus();
}

absl::Status Engine::Complete(TaskId id) {
  std::vector<ReleasedTask> released;
  absl::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status = CompleteLocked(id);
    if (status.ok() && !stopped_) {
      const int64_t now = options_.clock->NowNs();
      PassLocked(now, &released);
      MaybeWakeThreadLocked(now);
    }
  }
  Open(released);
  return status;
}

void Engine::ApplyRateLocked(LinkId link, double measured, double ours, int64_t now) {
  if (link >= links_.size()) return;
  Link& l = links_[link];
  l.state.measured_bytes_per_s = measured;
  if (ours >= 0) {
    l.state.foreign_bytes_per_s = std::max(0.0, measured - ours);
  } else if (!l.busy_since_sample) {
    // None of our tasks ran on the link over the interval: all of it is foreign.
    l.state.foreign_bytes_per_s = measured;
  }  // else: ours and foreign are mixed; keep the last clean estimate.
  l.state.occupancy_ns = now;
  bool running = false;
  for (uint32_t n : l.state.running) running |= n != 0;
  l.busy_since_sample = running;
}

void Engine::ReportOccupancy(LinkId link, double measured_bytes_per_s, double ours_bytes_per_s) {
  std::vector<ReleasedTask> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = options_.clock->NowNs();
    ApplyRateLocked(link, measured_bytes_per_s, ours_bytes_per_s, now);
    ++stats_.occupancy_samples;
    if (!stopped_) {
      PassLocked(now, &released);
      MaybeWakeThreadLocked(now);
    }
  }
  Open(released);
}

void Engine::BeginIteration(int64_t iteration) {
  std::vector<ReleasedTask> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = options_.clock->NowNs();
    if (iteration_.start_ns >= 0 && iteration > iteration_.current) {
      const int64_t sample = (now - iteration_.start_ns) / (iteration - iteration_.current);
      iteration_.period_ns = iteration_.period_ns == 0
                                 ? sample
                                 : iteration_.period_ns + (sample - iteration_.period_ns) / kPeriodSmoothing;
    }
    iteration_.current = iteration;
    iteration_.start_ns = now;
    if (!stopped_) {
      PassLocked(now, &released);
      MaybeWakeThreadLocked(now);
    }
  }
  Open(released);
}

void Engine::ReleaseLocked(Task* t, ReleaseReason reason, int64_t now, std::vector<ReleasedTask>* out) {
  t->state = TaskState::kRunning;
  t->reason = reason;
  t->release_ns = now;
  t->comm_head = false;
  running_.push_back(t);
  AccountLinksLocked(*t, -1, 1, static_cast<int64_t>(t->spec.bytes));
  auto q = comm_pending_.find(t->spec.comm);
  if (q != comm_pending_.end()) {
    auto pos = std::find(q->second.begin(), q->second.end(), t);
    if (pos != q->second.end()) q->second.erase(pos);
    if (q->second.empty()) {
      comm_pending_.erase(q);
    } else {
      q->second.front()->comm_head = true;
    }
  }
  ++stats_.released;
  if (reason == ReleaseReason::kMaxHold) ++stats_.held_to_bound;
  stats_.longest_hold_ns = std::max(stats_.longest_hold_ns, now - t->enqueue_ns);
  activity_ = true;
  out->push_back({t->id, t->spec.cookie, t->spec.comm, t->traffic_class(), reason, t->enqueue_ns, now,
                  t->spec.chunk_index});
}

void Engine::PassLocked(int64_t now, std::vector<ReleasedTask>* out) {
  policy_wake_ns_ = kNeverNs;
  for (int round = 0; round < kMaxRoundsPerPass && !pending_.empty(); ++round) {
    link_view_.resize(links_.size());
    for (size_t i = 0; i < links_.size(); ++i) link_view_[i] = links_[i].state;
    SchedulerView view;
    view.now_ns = now;
    view.pending = pending_;
    view.running = running_;
    view.links = link_view_;
    view.inflight_bytes = inflight_;
    view.iteration = iteration_;
    view.max_hold_ns = options_.max_hold_ns;
    decision_.Clear();
    policy_->Decide(view, &decision_);
    ++stats_.passes;
    policy_wake_ns_ = decision_.next_wake_ns;
    size_t applied = 0;
    for (const Release& r : decision_.releases) {
      auto it = tasks_.find(r.id);
      if (it == tasks_.end() || it->second->state != TaskState::kPending) continue;
      ReleaseLocked(it->second.get(), r.reason, now, out);
      ++applied;
    }
    if (applied == 0) break;
    std::erase_if(pending_, [](const Task* t) { return t->state != TaskState::kPending; });
  }
  // The bound, whatever the policy said. pending_ is in enqueue order.
  size_t expired = 0;
  while (expired < pending_.size() && now - pending_[expired]->enqueue_ns >= options_.max_hold_ns) {
    ReleaseLocked(tasks_.at(pending_[expired]->id).get(), ReleaseReason::kMaxHold, now, out);
    ++expired;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(expired));
}

int64_t Engine::WantedWakeLocked(int64_t now) const {
  int64_t wake = policy_wake_ns_;
  if (!pending_.empty()) {
    wake = std::min(wake, pending_.front()->enqueue_ns + options_.max_hold_ns);
    if (reader_ != nullptr) wake = std::min(wake, std::max(next_sample_ns_, now));
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
    sample = reader_ != nullptr && !pending_.empty() && options_.clock->NowNs() >= next_sample_ns_;
  }
  if (poll) poller->PollCompletions(&done);
  std::vector<DeviceRate> rates;
  if (sample) {
    absl::StatusOr<OccupancySnapshot> snap = reader_->Read();
    if (snap.ok()) {
      rates = meter_.Update(*snap);
    } else if (absl::IsUnavailable(snap.status())) {
      TRIRACE_TRACE(SCHED, "occupancy reader %s: %s", std::string(reader_->name()), snap.status().ToString());
    } else if (!reader_warned_) {
      reader_warned_ = true;
      TRIRACE_WARN(SCHED, "occupancy reader %s: %s (samples are skipped until it recovers)",
                   std::string(reader_->name()), snap.status().ToString());
    }
  }
  std::vector<ReleasedTask> released;
  int64_t wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = options_.clock->NowNs();
    if (poll) ++stats_.polls;
    for (TaskId id : done) CompleteLocked(id).IgnoreError();  // already completed via Complete()
    if (sample) {
      next_sample_ns_ = now + options_.occupancy_period_ns;
      ++stats_.occupancy_samples;
      for (const DeviceRate& r : rates) {
        for (const auto& [device, link] : device_links_) {
          if (device == r.device) ApplyRateLocked(link, r.bytes_per_s, r.ours_bytes_per_s, now);
        }
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

namespace {
int64_t ThreadCpuNs(clockid_t cid) {
  timespec ts{};
  return clock_gettime(cid, &ts) == 0 ? ts.tv_sec * 1'000'000'000LL + ts.tv_nsec : 0;
}
}  // namespace

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

void Engine::Open(const std::vector<ReleasedTask>& released) {
  for (const ReleasedTask& r : released) opener_->OpenGate(r);
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

size_t Engine::pending_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

size_t Engine::running_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_.size();
}

}  // namespace trirace::sched
