#include "scheduler/priority_policy.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "common/params.h"

namespace trirace::sched {
namespace {

int64_t PriorityKey(const Task& t) {
  return t.spec.tag.priority == kUnsetTag ? std::numeric_limits<int64_t>::min() : t.spec.tag.priority;
}
int64_t LayerKey(const Task& t) {
  return t.spec.tag.layer < 0 ? std::numeric_limits<int64_t>::max() : t.spec.tag.layer;
}

}  // namespace

PriorityPolicyConfig PriorityPolicyConfig::FromParams() {
  PriorityPolicyConfig c;
  c.window_ns = ParamInt(ParamId::kPriorityWindowUs) * 1000;
  c.window_bytes = static_cast<uint64_t>(ParamInt(ParamId::kPriorityWindowBytes));
  return c;
}

uint64_t PriorityPolicyConfig::WindowBytes(double bytes_per_s) const {
  if (window_bytes > 0) return window_bytes;
  return std::max<uint64_t>(1, WireBytes(window_ns, bytes_per_s, kFallbackWindowBytes));
}

void PriorityPolicy::Decide(const SchedulerView& view, Decision* out) {
  candidates_.clear();
  for (const Task* t : view.pending) {
    if (t->comm_head) candidates_.push_back(t);
  }
  std::sort(candidates_.begin(), candidates_.end(), [](const Task* a, const Task* b) {
    if (PriorityKey(*a) != PriorityKey(*b)) return PriorityKey(*a) > PriorityKey(*b);
    if (LayerKey(*a) != LayerKey(*b)) return LayerKey(*a) < LayerKey(*b);
    return a->submit_seq < b->submit_seq;
  });
  uint64_t inflight = std::accumulate(view.inflight_bytes.begin(), view.inflight_bytes.end(), uint64_t{0});
  for (const Task* t : candidates_) {
    double slowest = 0;
    for (LinkId id : t->spec.links) {
      const LinkState* link = view.Link(id);
      if (link != nullptr && link->capacity_bytes_per_s > 0 &&
          (slowest == 0 || link->capacity_bytes_per_s < slowest)) {
        slowest = link->capacity_bytes_per_s;
      }
    }
    if (inflight != 0 && inflight + t->spec.bytes > config_.WindowBytes(slowest)) break;
    out->releases.push_back({t->id, ReleaseReason::kPriority});
    inflight += t->spec.bytes;
  }
}

}  // namespace trirace::sched
