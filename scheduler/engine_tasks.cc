// The engine's task table: tasks by id, the held ones in submission order,
// the running ones in release order, and each comm's held ones in order
// (the first is the comm's head). Every function runs under mu_.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "scheduler/engine.h"

namespace trirace::sched {

Task* Engine::AddTaskLocked(TaskId id, TaskSpec spec, int64_t now) {
  auto owned = std::make_unique<Task>();
  Task* t = owned.get();
  t->id = id;
  t->spec = std::move(spec);
  // Unknown links are dropped here, so accounting on release and
  // completion always touches the same links.
  const size_t num_links = links_.size();
  std::erase_if(t->spec.links, [num_links](LinkId l) { return l >= num_links; });
  t->enqueue_ns = now;
  t->submit_seq = submit_seq_++;
  t->comm_seq = comm_seq_[t->spec.comm]++;
  if (!tasks_.try_emplace(id, std::move(owned)).second) {  // leaves `owned` alone on failure
    // A reserved id submitted twice is a launcher bug; keep both tasks.
    TRIRACE_WARN_ONCE(SCHED, "scheduler: task id %d submitted twice; using a new id", id);
    t->id = ReserveId();
    tasks_.try_emplace(t->id, std::move(owned));
  }
  ++stats_.submitted;
  activity_ = true;
  if (!t->spec.gated) {
    t->state = TaskState::kRunning;
    t->reason = ReleaseReason::kUngated;
    t->release_ns = now;
    running_.push_back(t);
    links_.Account(*t, 0, 1, static_cast<int64_t>(t->spec.bytes));
  } else {
    pending_.push_back(t);
    std::deque<Task*>& q = comm_pending_[t->spec.comm];
    q.push_back(t);
    t->comm_head = q.size() == 1;
    links_.Account(*t, 1, 0, 0);
  }
  return t;
}

void Engine::ReleaseLocked(Task* t, ReleaseReason reason, int64_t now, std::vector<ReleasedTask>* out) {
  t->state = TaskState::kRunning;
  t->reason = reason;
  t->release_ns = now;
  t->comm_head = false;
  running_.push_back(t);
  links_.Account(*t, -1, 1, static_cast<int64_t>(t->spec.bytes));
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

absl::Status Engine::CompleteLocked(TaskId id, int64_t now, int64_t started_ns) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return absl::NotFoundError(absl::StrCat("scheduler: Complete(", id, "): no such task"));
  Task* t = it->second.get();
  if (t->state == TaskState::kPending) {
    return absl::FailedPreconditionError(
        absl::StrCat("scheduler: Complete(", id, "): the task's gate is still closed"));
  }
  if (tuner_.enabled()) tuner_.OnComplete(*t, started_ns, now, links_.Snapshot());
  links_.Account(*t, 0, -1, -static_cast<int64_t>(t->spec.bytes));
  auto r = std::find(running_.begin(), running_.end(), t);
  if (r != running_.end()) running_.erase(r);
  policy_->OnTaskDone(id);
  tasks_.erase(it);
  ++stats_.completed;
  activity_ = true;
  return absl::OkStatus();
}

}  // namespace trirace::sched
