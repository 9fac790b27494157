#include "scheduler/link_table.h"

#include <algorithm>
#include <utility>

namespace trirace::sched {

LinkId LinkTable::Add(const LinkSpec& spec) {
  Link link;
  link.state.id = static_cast<LinkId>(links_.size());
  link.state.name = spec.name;
  link.state.capacity_bytes_per_s = spec.capacity_bytes_per_s;
  links_.push_back(std::move(link));
  return links_.back().state.id;
}

void LinkTable::Account(const Task& task, int delta_pending, int delta_running, int64_t delta_bytes) {
  const int c = ClassIndex(task.traffic_class());
  for (LinkId id : task.spec.links) {
    if (!Has(id)) continue;
    LinkState& s = links_[id].state;
    s.pending[c] += delta_pending;
    s.running[c] += delta_running;
    s.inflight_bytes[c] += delta_bytes;
    if (delta_running > 0) links_[id].busy_since_sample = true;
  }
  inflight_[c] += delta_bytes;
}

void LinkTable::ApplyRate(LinkId link, double measured, double ours, int64_t now) {
  if (!Has(link)) return;
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

void LinkTable::SetScales(LinkId link, double window_scale, double credit_scale) {
  if (!Has(link)) return;
  links_[link].state.window_scale = window_scale;
  links_[link].state.credit_scale = credit_scale;
}

const std::vector<LinkState>& LinkTable::Snapshot() {
  view_.resize(links_.size());
  for (size_t i = 0; i < links_.size(); ++i) view_[i] = links_[i].state;
  return view_;
}

}  // namespace trirace::sched
