// One policy pass and the hold bound, under mu_.
#include <cstddef>

#include "scheduler/engine.h"

namespace trirace::sched {
namespace {

// A pass that keeps releasing is repeated at most this many times (each
// repeat releases at least one task, so this only bounds pathological
// policies that release one task per pass).
constexpr int kMaxRoundsPerPass = 64;

}  // namespace

void Engine::ObserveLinksLocked(int64_t now) {
  if (tuner_.enabled()) tuner_.Observe(now, links_.Snapshot());
}

void Engine::TuneLocked(int64_t now) {
  if (!tuner_.enabled()) return;
  tuning_changes_.clear();
  tuner_.Adjust(now, links_.Snapshot(), &tuning_changes_);
  for (const TuningChange& c : tuning_changes_) {
    links_.SetScales(c.link, c.window_scale, c.credit_scale);
    ++stats_.tuning_changes;
    if (tuning_listener_) tuning_listener_(c);
  }
}

void Engine::PassLocked(int64_t now, std::vector<ReleasedTask>* out) {
  TuneLocked(now);
  policy_wake_ns_ = kNeverNs;
  for (int round = 0; round < kMaxRoundsPerPass && !pending_.empty(); ++round) {
    SchedulerView view;
    view.now_ns = now;
    view.pending = pending_;
    view.running = running_;
    view.links = links_.Snapshot();
    view.inflight_bytes = links_.inflight();
    view.iteration = iteration_;
    view.max_hold_ns = hold_bound_ns();
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
  const int64_t bound = hold_bound_ns();
  while (expired < pending_.size() && now - pending_[expired]->enqueue_ns >= bound) {
    ReleaseLocked(tasks_.at(pending_[expired]->id).get(), ReleaseReason::kMaxHold, now, out);
    ++expired;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(expired));
}

}  // namespace trirace::sched
