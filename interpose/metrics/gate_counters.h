// GateCounters: the gated ops' holds and release reasons, counted as their
// records finish, for the metrics file (metrics_text.h).
//
// Thread safety: Add and Fill from any thread (relaxed atomics: the counts
// are totals, read now and then).
#ifndef TRIRACE_INTERPOSE_METRICS_GATE_COUNTERS_H_
#define TRIRACE_INTERPOSE_METRICS_GATE_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "interpose/metrics/metrics_text.h"
#include "interpose/trace/trace_record.h"

namespace trirace::interpose {

class GateCounters {
 public:
  // A finished op record: counted when it went through a gate.
  void Add(const TraceRecord& r) {
    if (r.gate_wait_ns < 0) return;
    gated_.fetch_add(1, std::memory_order_relaxed);
    if (r.gate_wait_ns > 0) {
      held_.fetch_add(1, std::memory_order_relaxed);
      held_ns_.fetch_add(r.gate_wait_ns, std::memory_order_relaxed);
    }
    if (r.release_reason >= 0 && r.release_reason < kNumReleaseReasons) {
      releases_[size_t(r.release_reason)].fetch_add(1, std::memory_order_relaxed);
    }
  }
  void Fill(MetricsSnapshot* s) const {
    s->gated_ops = gated_.load(std::memory_order_relaxed);
    s->held_ops = held_.load(std::memory_order_relaxed);
    s->held_ns = held_ns_.load(std::memory_order_relaxed);
    for (int i = 0; i < kNumReleaseReasons; ++i) s->releases[size_t(i)] = releases_[size_t(i)].load(std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> gated_{0}, held_{0};
  std::atomic<int64_t> held_ns_{0};
  std::array<std::atomic<uint64_t>, kNumReleaseReasons> releases_{};
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_METRICS_GATE_COUNTERS_H_
