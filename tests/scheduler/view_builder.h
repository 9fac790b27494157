// Test helper: builds a SchedulerView by hand, the way the engine would
// (per-link counters, in-flight bytes, comm heads), so policies can be
// tested pass by pass with an explicit time.
#ifndef TRIRACE_TESTS_SCHEDULER_VIEW_BUILDER_H_
#define TRIRACE_TESTS_SCHEDULER_VIEW_BUILDER_H_

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "scheduler/policy.h"

namespace trirace::sched {
// Readable reasons in test failures.
inline void PrintTo(ReleaseReason r, std::ostream* os) { *os << ReleaseReasonName(r); }
}  // namespace trirace::sched

namespace trirace::sched::testing {

class ViewBuilder {
 public:
  // A link of `capacity` bytes/s; returns its id.
  LinkId AddLink(double capacity = 12.5e9) {
    LinkState s;
    s.id = static_cast<LinkId>(links_.size());
    s.capacity_bytes_per_s = capacity;
    links_.push_back(s);
    return s.id;
  }
  // Foreign traffic measured on `link` at time `at_ns`.
  void SetForeign(LinkId link, double bytes_per_s, int64_t at_ns) {
    links_[link].foreign_bytes_per_s = bytes_per_s;
    links_[link].measured_bytes_per_s = bytes_per_s;
    links_[link].occupancy_ns = at_ns;
  }
  // Other processes' P2P/SPARSE send bytes in flight on `link`, sampled at `at_ns`.
  void SetForeignUrgent(LinkId link, int64_t bytes, int64_t at_ns) {
    links_[link].foreign_urgent_bytes = bytes;
    links_[link].occupancy_ns = at_ns;
  }
  // The tuner's factors on `link`'s window and credit.
  void SetScales(LinkId link, double window_scale, double credit_scale) {
    links_[link].window_scale = window_scale;
    links_[link].credit_scale = credit_scale;
  }
  // A held task; returns it so a test can tweak the spec.
  Task& Pending(TrafficClass cls, uint64_t bytes, std::vector<LinkId> links, int64_t enqueue_ns = 0,
                CommId comm = 0) {
    return Add(cls, bytes, std::move(links), enqueue_ns, comm, TaskState::kPending);
  }
  Task& Running(TrafficClass cls, uint64_t bytes, std::vector<LinkId> links, CommId comm = 1000) {
    return Add(cls, bytes, std::move(links), 0, comm, TaskState::kRunning);
  }
  IterationInfo& iteration() { return iteration_; }

  // The view at `now_ns`; valid until the builder changes.
  const SchedulerView& Build(int64_t now_ns, int64_t max_hold_ns = 5'000'000) {
    pending_.clear();
    running_.clear();
    view_links_ = links_;
    std::unordered_map<CommId, bool> head_seen;
    view_ = SchedulerView();
    for (auto& t : tasks_) {
      const int c = ClassIndex(t->traffic_class());
      if (t->state == TaskState::kPending) {
        pending_.push_back(t.get());
        t->comm_head = !head_seen[t->spec.comm];
        head_seen[t->spec.comm] = true;
      } else {
        running_.push_back(t.get());
        view_.inflight_bytes[c] += t->spec.bytes;
      }
      for (LinkId l : t->spec.links) {
        LinkState& s = view_links_[l];
        if (t->state == TaskState::kPending) {
          ++s.pending[c];
        } else {
          ++s.running[c];
          s.inflight_bytes[c] += t->spec.bytes;
        }
      }
    }
    view_.now_ns = now_ns;
    view_.pending = pending_;
    view_.running = running_;
    view_.links = view_links_;
    view_.iteration = iteration_;
    view_.max_hold_ns = max_hold_ns;
    return view_;
  }

  // Runs `policy` at `now_ns` and returns its decision.
  Decision Decide(Policy& policy, int64_t now_ns, int64_t max_hold_ns = 5'000'000) {
    Decision d;
    policy.Decide(Build(now_ns, max_hold_ns), &d);
    return d;
  }

 private:
  Task& Add(TrafficClass cls, uint64_t bytes, std::vector<LinkId> links, int64_t enqueue_ns, CommId comm,
            TaskState state) {
    auto t = std::make_unique<Task>();
    t->id = next_id_++;
    t->spec.traffic_class = cls;
    t->spec.bytes = bytes;
    t->spec.links = std::move(links);
    t->spec.comm = comm;
    t->enqueue_ns = enqueue_ns;
    t->state = state;
    tasks_.push_back(std::move(t));
    return *tasks_.back();
  }

  TaskId next_id_ = 1;
  std::vector<LinkState> links_;
  std::vector<LinkState> view_links_;
  std::deque<std::unique_ptr<Task>> tasks_;
  std::vector<const Task*> pending_;
  std::vector<const Task*> running_;
  IterationInfo iteration_;
  SchedulerView view_;
};

// The reason `id` was released with in `d`, or nullopt if it was not.
inline std::optional<ReleaseReason> ReasonFor(const Decision& d, TaskId id) {
  for (const Release& r : d.releases) {
    if (r.id == id) return r.reason;
  }
  return std::nullopt;
}

}  // namespace trirace::sched::testing

#endif  // TRIRACE_TESTS_SCHEDULER_VIEW_BUILDER_H_
