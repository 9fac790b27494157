#include "scheduler/window_tuner.h"

#include <algorithm>
#include <cmath>

#include "common/params.h"

namespace trirace::sched {
namespace {

constexpr int kDense = ClassIndex(TrafficClass::kDense);

// The smaller of two minima, where 0 means "none yet".
double MinOf(double a, double b) {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return std::min(a, b);
}

bool Changed(double a, double b) { return std::fabs(a - b) > 1e-9; }

}  // namespace

WindowTunerConfig WindowTunerConfig::FromParams() {
  WindowTunerConfig c;
  c.enabled = ParamChoice<TuneSetting>() == TuneSetting::kOn;
  c.interval_ns = ParamInt(ParamId::kTuneIntervalUs) * 1000;
  c.p2p_slowdown = ParamDouble(ParamId::kTuneP2pSlowdown);
  c.min_scale = ParamDouble(ParamId::kTuneMinScale);
  c.max_scale = std::max(c.min_scale, ParamDouble(ParamId::kTuneMaxScale));
  return c;
}

WindowTuner::PerLink& WindowTuner::At(LinkId id) {
  if (id >= links_.size()) links_.resize(id + 1);
  return links_[id];
}

void WindowTuner::Observe(int64_t now, std::span<const LinkState> links) {
  if (!config_.enabled) return;
  const int64_t dt = last_observe_ns_ < 0 ? 0 : std::max<int64_t>(0, now - last_observe_ns_);
  last_observe_ns_ = now;
  for (const LinkState& s : links) {
    PerLink& l = At(s.id);
    if (l.interval_start_ns < 0) l.interval_start_ns = now;
    if (s.pending[kDense] != 0) (s.HigherClassActive() ? l.held_beside_ns : l.held_gap_ns) += dt;
    bool running = false;
    for (uint32_t n : s.running) running |= n != 0;
    if (running) l.busy_ns += dt;
    if (s.occupancy_ns >= 0 && now - s.occupancy_ns <= kFreshSampleNs) {
      l.measured_bytes += s.measured_bytes_per_s * static_cast<double>(dt) / 1e9;
      l.measured_ns += dt;
    }
    l.dense_inflight = s.running[kDense] != 0;
    if (l.dense_inflight) l.dense_seen_ns = now;
  }
}

void WindowTuner::OnComplete(const Task& task, int64_t started_ns, int64_t now,
                             std::span<const LinkState> links) {
  if (!config_.enabled) return;
  const bool higher = task.traffic_class() == TrafficClass::kP2P || task.traffic_class() == TrafficClass::kSparse;
  const int64_t start = started_ns >= 0 ? started_ns : task.release_ns;
  for (LinkId id : task.spec.links) {
    if (id >= links.size()) continue;
    PerLink& l = At(id);
    if (task.reason == ReleaseReason::kDenseGap) ++l.dense_by_gap;
    if (task.reason == ReleaseReason::kDenseCredit) ++l.dense_by_credit;
    const double capacity = links[id].capacity_bytes_per_s;
    if (!higher || !task.spec.receives || capacity <= 0 || start < 0 || now < start) continue;
    const double wire_ns = static_cast<double>(task.spec.bytes) / capacity * 1e9;
    const double cost = static_cast<double>(now - start) / (wire_ns + kLatencyFloorNs);
    if (cost < kMinCost) {
      ++l.too_fast;
      continue;
    }
    // Beside DENSE if DENSE was in flight there at any time since it started.
    if (l.dense_inflight || l.dense_seen_ns >= start) {
      l.beside_min = MinOf(l.beside_min, cost);
      ++l.beside_samples;
    } else {
      l.alone_now = MinOf(l.alone_now, cost);
    }
  }
}

void WindowTuner::Adjust(int64_t now, std::span<const LinkState> links, std::vector<TuningChange>* changes) {
  if (!config_.enabled) return;
  for (const LinkState& s : links) {
    PerLink& l = At(s.id);
    if (l.interval_start_ns < 0 || now - l.interval_start_ns < config_.interval_ns) continue;
    TuningChange change;
    if (s.capacity_bytes_per_s > 0 && Decide(l, now, s.capacity_bytes_per_s, &change)) {
      change.link = s.id;
      change.link_name = s.name;
      change.time_ns = now;
      changes->push_back(std::move(change));
    }
    // The next interval.
    l.alone_min[l.alone_next] = l.alone_now;
    l.alone_next = (l.alone_next + 1) % kBaselineIntervals;
    l.alone_now = 0;
    if (l.beside_samples == 0) l.dense_by_gap = l.dense_by_credit = 0;  // nothing to judge them by
    l.held_gap_ns = l.held_beside_ns = 0;
    l.busy_ns = 0;
    l.too_fast = 0;
    l.measured_bytes = 0;
    l.measured_ns = 0;
    l.interval_start_ns = now;
  }
}

bool WindowTuner::Decide(PerLink& l, int64_t now, double capacity, TuningChange* change) {
  const double span_ns = static_cast<double>(now - l.interval_start_ns);
  TuningEvidence& e = change->evidence;
  e.utilisation = static_cast<double>(l.measured_ns) >= span_ns / 2  // samples covered enough of it to speak for it
                      ? l.measured_bytes / (capacity * static_cast<double>(l.measured_ns) / 1e9)
                      : static_cast<double>(l.busy_ns) / span_ns;
  e.held_gap = static_cast<double>(l.held_gap_ns) / span_ns;
  e.held_beside = static_cast<double>(l.held_beside_ns) / span_ns;
  double baseline = l.alone_now;
  for (double m : l.alone_min) baseline = MinOf(baseline, m);
  bool by_gap = false, by_credit = false;
  e.samples = l.beside_samples;
  e.too_fast = l.too_fast;
  e.baseline = baseline > 0;
  if (baseline <= 0) baseline = 1;  // the wire time (plus the floor) itself
  if (l.beside_samples >= config_.min_samples) {
    e.p2p_slowdown = l.beside_min / baseline;
    by_gap = l.dense_by_gap > 0;
    by_credit = l.dense_by_credit > 0;
    l.beside_min = 0;
    l.beside_samples = 0;
    l.dense_by_gap = l.dense_by_credit = 0;
  }
  change->window_before = l.window_scale;
  change->credit_before = l.credit_scale;
  auto clamp = [this](double v) { return std::clamp(v, config_.min_scale, config_.max_scale); };
  if (e.p2p_slowdown > config_.p2p_slowdown) {
    if (by_gap) l.window_scale = clamp(l.window_scale * config_.decrease);
    if (by_credit) l.credit_scale = clamp(l.credit_scale * config_.decrease);
    change->why = "p2p-slowed";
  } else if (e.utilisation < config_.utilisation && e.held_gap + e.held_beside >= kHeldShare) {
    if (e.held_gap >= e.held_beside) {
      l.window_scale = clamp(l.window_scale + config_.increase);
      change->why = "window-room";
    } else {
      l.credit_scale = clamp(l.credit_scale + config_.increase);
      change->why = "credit-room";
    }
  }
  change->window_scale = l.window_scale;
  change->credit_scale = l.credit_scale;
  return Changed(change->window_scale, change->window_before) || Changed(change->credit_scale, change->credit_before);
}

}  // namespace trirace::sched
