#include "scheduler/trirace_policy.h"

#include <algorithm>
#include <limits>

#include "common/params.h"

namespace trirace::sched {
namespace {

int64_t LayerKey(const Task& t) {
  return t.spec.tag.layer < 0 ? std::numeric_limits<int64_t>::max() : t.spec.tag.layer;
}
int64_t PriorityKey(const Task& t) {
  return t.spec.tag.priority == kUnsetTag ? std::numeric_limits<int64_t>::min() : t.spec.tag.priority;
}

// Bytes of DENSE running on `link` from `task`'s own comm: its stream runs
// them before `task` whatever the gate says.
uint64_t SameCommDense(const Task& task, const SchedulerView& view, LinkId link) {
  uint64_t bytes = 0;
  for (const Task* r : view.running) {
    if (r->spec.comm != task.spec.comm || r->traffic_class() != TrafficClass::kDense) continue;
    if (std::find(r->spec.links.begin(), r->spec.links.end(), link) != r->spec.links.end()) bytes += r->spec.bytes;
  }
  return bytes;
}

}  // namespace

uint64_t TriracePolicyConfig::WindowBytes(double capacity_bytes_per_s) const {
  if (dense_window_bytes > 0) return dense_window_bytes;
  return std::max<uint64_t>(1, WireBytes(dense_window_ns, capacity_bytes_per_s, kFallbackWindowBytes));
}

uint64_t TriracePolicyConfig::CreditBytes(double capacity_bytes_per_s) const {
  if (dense_credit_bytes > 0) return dense_credit_bytes;
  if (dense_credit_ns <= 0) return 0;
  return WireBytes(dense_credit_ns, capacity_bytes_per_s, kFallbackCreditBytes);
}

int64_t TriracePolicyConfig::UrgentMaxAgeNs(int64_t occupancy_period_ns) {
  // Two and a half periods: one sample late is still fresh, two missed are not.
  return std::max<int64_t>(kMinUrgentMaxAgeNs, occupancy_period_ns * 5 / 2);
}

TriracePolicyConfig TriracePolicyConfig::FromParams() {
  TriracePolicyConfig c;
  c.dense_window_ns = ParamInt(ParamId::kDenseWindowUs) * 1000;
  c.dense_credit_ns = ParamInt(ParamId::kDenseCreditUs) * 1000;
  c.dense_window_bytes = static_cast<uint64_t>(ParamInt(ParamId::kDenseWindowBytes));
  c.dense_credit_bytes = static_cast<uint64_t>(ParamInt(ParamId::kDenseCreditBytes));
  c.deadline_slack_ns = ParamInt(ParamId::kDeadlineSlackUs) * 1000;
  c.foreign_headroom = ParamDouble(ParamId::kForeignHeadroom);
  c.wire_class_priority = NetClassPriorityEnabled();
  c.urgent_max_age_ns =
      std::min(UrgentMaxAgeNs(ParamInt(ParamId::kOccupancyPeriodUs) * 1000), c.occupancy_max_age_ns);
  return c;
}

int64_t TriracePolicy::EffectiveDeadlineNs(const Task& task, const SchedulerView& view) {
  if (task.spec.deadline_ns) return *task.spec.deadline_ns;
  const int64_t iter = task.spec.tag.iteration;
  const IterationInfo& cur = view.iteration;
  if (iter == kUnsetTag || cur.current == kUnsetTag) return kNeverNs;
  if (iter < cur.current) return task.enqueue_ns;  // the next step already began
  if (iter == cur.current && cur.period_ns > 0 && cur.start_ns >= 0) return cur.start_ns + cur.period_ns;
  return kNeverNs;
}

bool TriracePolicy::DenseFits(const Task& task, const SchedulerView& view, bool* credit) const {
  *credit = false;
  for (LinkId id : task.spec.links) {
    const LinkState* link = view.Link(id);
    if (link == nullptr) continue;
    // [R3] SPARSE counts here; [R10] not when the wire orders the classes.
    const bool foreign_urgent = link->foreign_urgent_bytes > 0 && link->occupancy_ns >= 0 &&
                                view.now_ns - link->occupancy_ns <= config_.urgent_max_age_ns;  // [R13]
    const bool higher = !config_.wire_class_priority && (link->HigherClassActive() || foreign_urgent);  // [R10]
    double limit = higher ? static_cast<double>(config_.CreditBytes(link->capacity_bytes_per_s)) *  // [R5], [R11]
                                link->credit_scale                                                  // [R12]
                          : static_cast<double>(config_.WindowBytes(link->capacity_bytes_per_s)) *  // [R4], [R11]
                                link->window_scale;                                                 // [R12]
    const bool fresh = link->occupancy_ns >= 0 &&
                       view.now_ns - link->occupancy_ns <= config_.occupancy_max_age_ns;
    if (fresh && link->capacity_bytes_per_s > 0 && config_.foreign_headroom < 1) {
      // [R9]: no headroom left -> limit 0, which neither `within` nor
      // `alone_in_gap` below accepts.
      const double free = 1 - config_.foreign_headroom - link->ForeignFraction();
      limit *= std::max(0.0, free) / (1 - config_.foreign_headroom);  // [R9]
    }
    uint64_t inflight = link->inflight_bytes[ClassIndex(TrafficClass::kDense)] + released_dense_[id];
    // [R10]: the window is for DENSE of other comms; the comm's own ran
    // ahead of the task on its stream anyway (without class priority it
    // counts: the gap after each chunk is where P2P goes).
    if (config_.wire_class_priority && !dense_held_[id]) {
      inflight -= std::min(inflight, SameCommDense(task, view, id));
    }
    const bool within = static_cast<double>(inflight + task.spec.bytes) <= limit;
    const bool alone_in_gap = !higher && inflight == 0 && limit > 0;  // [R4] oversized task
    if (!within && !alone_in_gap) return false;
    if (higher) *credit = true;
  }
  return true;
}

void TriracePolicy::Decide(const SchedulerView& view, Decision* out) {
  const int64_t now = view.now_ns;
  const int64_t max_hold = config_.max_hold_ns > 0 ? config_.max_hold_ns : view.max_hold_ns;
  candidates_.clear();
  released_dense_.assign(view.links.size(), 0);
  dense_held_.assign(view.links.size(), 0);
  for (const Task* t : view.pending) {
    switch (t->traffic_class()) {
      case TrafficClass::kP2P:
        out->releases.push_back({t->id, ReleaseReason::kP2P});  // [R1]
        continue;
      case TrafficClass::kOther:
        out->releases.push_back({t->id, ReleaseReason::kOtherClass});  // [R2]
        continue;
      case TrafficClass::kSparse:
        out->releases.push_back({t->id, ReleaseReason::kSparse});  // [R3]
        continue;
      case TrafficClass::kDense:
        break;
    }
    if (max_hold > 0 && now - t->enqueue_ns >= max_hold) {
      out->releases.push_back({t->id, ReleaseReason::kMaxHold});  // [R8]
      continue;
    }
    if (max_hold > 0) out->WakeAt(t->enqueue_ns + max_hold);  // [R8]
    const int64_t deadline = EffectiveDeadlineNs(*t, view);
    if (deadline != kNeverNs) {
      if (deadline - config_.deadline_slack_ns <= now) {
        out->releases.push_back({t->id, ReleaseReason::kDeadline});  // [R6]
        continue;
      }
      out->WakeAt(deadline - config_.deadline_slack_ns);  // [R6]
    }
    if (t->comm_head) candidates_.push_back(t);
  }
  std::sort(candidates_.begin(), candidates_.end(), [](const Task* a, const Task* b) {  // [R7]
    if (LayerKey(*a) != LayerKey(*b)) return LayerKey(*a) < LayerKey(*b);
    if (PriorityKey(*a) != PriorityKey(*b)) return PriorityKey(*a) > PriorityKey(*b);
    return a->submit_seq < b->submit_seq;
  });
  for (const Task* t : candidates_) {
    bool credit = false;
    if (!DenseFits(*t, view, &credit)) {
      for (LinkId id : t->spec.links) {
        if (id < dense_held_.size()) dense_held_[id] = 1;  // [R7] over [R10]'s exemption
      }
      continue;
    }
    out->releases.push_back({t->id, credit ? ReleaseReason::kDenseCredit : ReleaseReason::kDenseGap});
    for (LinkId id : t->spec.links) {
      if (id < released_dense_.size()) released_dense_[id] += t->spec.bytes;
    }
  }
}

}  // namespace trirace::sched
