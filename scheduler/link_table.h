// The engine's links: what each policy pass sees of them (LinkState) and
// the bookkeeping that keeps it true as tasks are held, released and
// completed, and as occupancy samples arrive.
//
// A task is charged on every link it crosses: held (pending), running and
// its bytes in flight, by class. A sample gives the link's measured
// traffic; the foreign part (not ours) is measured minus ours when the
// source knows ours, else all of it when none of our tasks ran on the link
// since the previous sample, else the last clean estimate stays.
//
// Thread safety: none; the engine calls it with its lock held.
#ifndef TRIRACE_SCHEDULER_LINK_TABLE_H_
#define TRIRACE_SCHEDULER_LINK_TABLE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/link_spec.h"
#include "scheduler/policy.h"
#include "scheduler/task.h"

namespace trirace::sched {

class LinkTable {
 public:
  // Ids are 0, 1, ... in call order.
  LinkId Add(const LinkSpec& spec);
  size_t size() const { return states_.size(); }
  bool Has(LinkId id) const { return id < states_.size(); }

  // Adds the deltas to the task's class on each of its links, and to the
  // bytes in flight over all links.
  void Account(const Task& task, int delta_pending, int delta_running, int64_t delta_bytes);
  // A sample of `link` at `now`: all traffic measured, and this process's
  // own part when known (>= 0), in bytes/s; other processes' P2P/SPARSE
  // send bytes in flight when known (>= 0; LinkState::foreign_urgent_bytes).
  // Unknown links are ignored.
  void ApplyRate(LinkId link, double measured, double ours, int64_t now, int64_t others_urgent = -1);
  // The tuner's factors for `link` (LinkState::window_scale, credit_scale).
  void SetScales(LinkId link, double window_scale, double credit_scale);

  // The links as a policy pass sees them: the table's own states, no copy;
  // valid until the next Add, and current until the next change.
  std::span<const LinkState> Snapshot() const { return states_; }
  // Bytes of running tasks, by class, over all links.
  const ClassBytes& inflight() const { return inflight_; }

 private:
  std::vector<LinkState> states_;
  std::vector<char> busy_since_sample_;  // per link: our tasks ran on it since the last sample
  ClassBytes inflight_{};
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_LINK_TABLE_H_
