#include "scheduler/link_table.h"

#include <algorithm>
#include <utility>

namespace trirace::sched {

LinkId LinkTable::Add(const LinkSpec& spec) {
  LinkState state;
  state.id = static_cast<LinkId>(states_.size());
  state.name = spec.name;
  state.capacity_bytes_per_s = spec.capacity_bytes_per_s;
  states_.push_back(std::move(state));
  busy_since_sample_.push_back(0);
  return states_.back().id;
}

void LinkTable::Account(const Task& task, int delta_pending, int delta_running, int64_t delta_bytes) {
  const int c = ClassIndex(task.traffic_class());
  for (LinkId id : task.spec.links) {
    if (!Has(id)) continue;
    LinkState& s = states_[id];
    s.pending[c] += delta_pending;
    s.running[c] += delta_running;
    s.inflight_bytes[c] += delta_bytes;
    if (delta_running > 0) busy_since_sample_[id] = 1;
  }
  inflight_[c] += delta_bytes;
}

void LinkTable::ApplyRate(LinkId link, double measured, double ours, int64_t now, int64_t others_urgent) {
  if (!Has(link)) return;
  LinkState& s = states_[link];
  s.measured_bytes_per_s = measured;
  s.foreign_urgent_bytes = others_urgent;
  if (ours >= 0) {
    s.foreign_bytes_per_s = std::max(0.0, measured - ours);
  } else if (!busy_since_sample_[link]) {
    // None of our tasks ran on the link over the interval: all of it is foreign.
    s.foreign_bytes_per_s = measured;
  }  // else: ours and foreign are mixed; keep the last clean estimate.
  s.occupancy_ns = now;
  bool running = false;
  for (uint32_t n : s.running) running |= n != 0;
  busy_since_sample_[link] = running;
}

void LinkTable::SetScales(LinkId link, double window_scale, double credit_scale) {
  if (!Has(link)) return;
  states_[link].window_scale = window_scale;
  states_[link].credit_scale = credit_scale;
}

}  // namespace trirace::sched
