#include "sim/net/network.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace trirace::sim {
namespace {

constexpr double kFrameBytes = 9000;
constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow with less than this left is done (rounding of rate * time).
constexpr double kDoneBytes = 1e-3;

// Nanoseconds to move `bytes` at `bytes_per_s`, rounded up.
int64_t NsFor(double bytes, double bytes_per_s) {
  const double ns = std::ceil(bytes / bytes_per_s * 1e9);
  return ns >= 9e18 ? kNever : std::max<int64_t>(int64_t(ns), 0);
}

}  // namespace

Network::Network(std::vector<NetLinkSpec> links, bool class_queues) : Network([&] {
  for (NetLinkSpec& l : links) l.class_queues = class_queues;
  return std::move(links);
}()) {}

Network::Network(std::vector<NetLinkSpec> links) {
  links_.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    Link& l = links_[i];
    l.spec = std::move(links[i]);
    l.spec.burst_bytes = EffectiveBurst(l.spec);
    l.tokens = l.spec.burst_bytes;
    l.at_line = l.spec.burst_bytes > 0;
  }
}

double Network::EffectiveBurst(const NetLinkSpec& spec) {
  return spec.burst_bytes < kFrameBytes || spec.line_bytes_per_s <= spec.bytes_per_s ? 0 : spec.burst_bytes;
}

int Network::AddCounter() {
  counters_.emplace_back();
  counters_.back().since = now_;
  return int(counters_.size()) - 1;
}

double Network::Capacity(const Link& l) const {
  if (l.spec.bytes_per_s <= 0) return kInf;
  return l.at_line ? l.spec.line_bytes_per_s : l.spec.bytes_per_s;
}

void Network::Push(int64_t t, EventKind kind, int32_t id, uint32_t version) {
  events_.push(Event{t, seq_++, kind, id, version});
}

FlowIx Network::Start(FlowSpec spec, int64_t now) {
  now_ = std::max(now_, now);
  // Slots of finished flows are reused; a slot's version keeps counting,
  // so events for its earlier flows stay stale.
  FlowIx f;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
    const uint32_t version = flows_[size_t(f)].version + 1;
    flows_[size_t(f)] = Flow{};
    flows_[size_t(f)].version = version;
  } else {
    f = FlowIx(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[size_t(f)];
  flow.spec = std::move(spec);
  flow.left = std::max(flow.spec.bytes, 0.0);
  flow.start_ns = now_ + std::max<int64_t>(flow.spec.latency_ns, 0);
  flow.unlimited = true;
  for (const FlowLink& fl : flow.spec.links) {
    if (links_[size_t(fl.link)].spec.bytes_per_s > 0) flow.unlimited = false;
  }
  ++stats_.flows;
  if (flow.spec.fifo_key >= 0) {
    std::deque<FlowIx>& q = fifo_[flow.spec.fifo_key];
    q.push_back(f);
    flow.queued_head = q.size() == 1;
  }
  if (flow.queued_head) Push(flow.start_ns, EventKind::kStart, f, flow.version);
  return f;
}

void Network::MarkDirty(LinkIx l) { dirty_.push_back(l); }

void Network::Activate(FlowIx f) {
  Flow& flow = flows_[size_t(f)];
  flow.state = FlowState::kActive;
  flow.since = now_;
  if (flow.unlimited || flow.left <= kDoneBytes) {
    unlimited_started_.push_back(f);
    return;
  }
  flow.on_links = true;
  for (const FlowLink& fl : flow.spec.links) {
    links_[size_t(fl.link)].active.push_back(f);
    MarkDirty(fl.link);
  }
}

void Network::Finish(FlowIx f, std::vector<uint64_t>* finished) {
  Flow& flow = flows_[size_t(f)];
  if (flow.state == FlowState::kDone) return;
  flow.state = FlowState::kDone;
  flow.left = 0;
  if (flow.on_links) {
    flow.on_links = false;
    for (const FlowLink& fl : flow.spec.links) {
      Link& l = links_[size_t(fl.link)];
      auto it = std::find(l.active.begin(), l.active.end(), f);
      if (it != l.active.end()) {
        *it = l.active.back();
        l.active.pop_back();
      }
      MarkDirty(fl.link);
      if (fl.counter >= 0 && flow.rate > 0) {
        Integrator& c = counters_[size_t(fl.counter)];
        c.SetRate(now_, c.rate - flow.rate * fl.transfers);
      }
    }
    flow.rate = 0;
  }
  finished->push_back(flow.spec.cookie);
  flow.spec.links.clear();
  flow.spec.links.shrink_to_fit();
  free_.push_back(f);
  if (flow.spec.fifo_key >= 0) {
    auto q = fifo_.find(flow.spec.fifo_key);
    if (q != fifo_.end()) {
      if (!q->second.empty() && q->second.front() == f) q->second.pop_front();
      if (q->second.empty()) {
        fifo_.erase(q);
      } else {
        Flow& next = flows_[size_t(q->second.front())];
        next.queued_head = true;
        Push(std::max(next.start_ns, now_), EventKind::kStart, q->second.front(), next.version);
      }
    }
  }
}

void Network::SettleTokens(Link& l) {
  if (l.spec.burst_bytes <= 0) return;
  const double dt = double(now_ - l.tokens_since) * 1e-9;
  l.tokens = std::clamp(l.tokens + (l.spec.bytes_per_s - l.used) * dt, 0.0, l.spec.burst_bytes);
  l.tokens_since = now_;
}

void Network::ScheduleBucket(LinkIx li) {
  Link& l = links_[size_t(li)];
  if (l.spec.burst_bytes <= 0) return;
  ++l.version;
  const double net = l.spec.bytes_per_s - l.used;  // bytes/s into the bucket
  int64_t ns = kNever;
  if (l.at_line && net < 0) ns = NsFor(l.tokens, -net);
  if (!l.at_line && net > 0) ns = NsFor(std::max(kFrameBytes - l.tokens, 0.0), net);
  if (ns != kNever) Push(now_ + ns, EventKind::kBucket, li, l.version);
}

void Network::Solve() {
  if (dirty_.empty()) return;
  ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();
  // The links and flows connected to a change.
  for (LinkIx d : dirty_) {
    if (links_[size_t(d)].mark == epoch_) continue;
    links_[size_t(d)].mark = epoch_;
    size_t head = comp_links_.size();
    comp_links_.push_back(d);
    while (head < comp_links_.size()) {
      const Link& l = links_[size_t(comp_links_[head++])];
      for (FlowIx f : l.active) {
        Flow& flow = flows_[size_t(f)];
        if (flow.mark == epoch_) continue;
        flow.mark = epoch_;
        comp_flows_.push_back(f);
        for (const FlowLink& fl : flow.spec.links) {
          Link& next = links_[size_t(fl.link)];
          if (next.mark == epoch_) continue;
          next.mark = epoch_;
          comp_links_.push_back(fl.link);
        }
      }
    }
  }
  dirty_.clear();
  ++stats_.solves;
  // Flows in a fixed order, whatever order the search found them in.
  std::sort(comp_flows_.begin(), comp_flows_.end());
  for (LinkIx li : comp_links_) {
    Link& l = links_[size_t(li)];
    SettleTokens(l);
    l.rem = Capacity(l);
    l.users = 0;
  }
  // Strict priority where the limited links have class queues; where only
  // some have, the levels meet FIFO links (SolveMixed).
  bool any_classes = false, any_fifo = false;
  for (LinkIx li : comp_links_) {
    const Link& l = links_[size_t(li)];
    if (l.spec.bytes_per_s <= 0) continue;
    (l.spec.class_queues ? any_classes : any_fifo) = true;
  }
  const bool by_level = any_classes;
  const bool mixed = any_classes && any_fifo;
  std::vector<double> old_rate(comp_flows_.size());
  int max_level = 0;
  for (size_t i = 0; i < comp_flows_.size(); ++i) {
    Flow& flow = flows_[size_t(comp_flows_[i])];
    flow.left = std::max(flow.left - flow.rate * double(now_ - flow.since) * 1e-9, 0.0);
    flow.since = now_;
    old_rate[i] = flow.rate;
    flow.frozen = false;
    if (by_level) max_level = std::max(max_level, flow.spec.level);
  }
  if (mixed) {
    SolveMixed();
  } else {
    SolveByLevel(max_level, by_level);
  }
  // New rates: counters, finish events, link use and buckets.
  for (size_t i = 0; i < comp_flows_.size(); ++i) {
    const FlowIx f = comp_flows_[i];
    Flow& flow = flows_[size_t(f)];
    if (flow.rate == old_rate[i] && old_rate[i] > 0) continue;  // its finish event stands
    for (const FlowLink& fl : flow.spec.links) {
      if (fl.counter < 0) continue;
      Integrator& c = counters_[size_t(fl.counter)];
      c.SetRate(now_, c.rate + (flow.rate - old_rate[i]) * fl.transfers);
    }
    ++flow.version;
    // A starved flow (rate 0) waits for the next solve to give it a share.
    if (const int64_t ns = flow.rate > 0 ? NsFor(flow.left, flow.rate) : kNever; ns != kNever) {
      Push(now_ + ns, EventKind::kFinish, f, flow.version);
    }
  }
  // Every flow moving on a component link is in the component.
  for (LinkIx li : comp_links_) links_[size_t(li)].users = 0;
  std::vector<double>& used = used_scratch_;
  used.assign(comp_links_.size(), 0);
  for (size_t i = 0; i < comp_links_.size(); ++i) links_[size_t(comp_links_[i])].users = int64_t(i);
  for (FlowIx f : comp_flows_) {
    const Flow& flow = flows_[size_t(f)];
    for (const FlowLink& fl : flow.spec.links) used[size_t(links_[size_t(fl.link)].users)] += flow.rate * fl.transfers;
  }
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    Link& l = links_[size_t(comp_links_[i])];
    l.users = 0;
    l.bytes.SetRate(now_, used[i]);
    l.used = used[i];
    ScheduleBucket(comp_links_[i]);
  }
}

void Network::SolveByLevel(int max_level, bool by_level) {
  // Progressive filling, level by level: the tightest link's fair share
  // fixes the rate of every unfrozen flow on it.
  using Share = std::pair<double, LinkIx>;
  std::vector<Share> heap;
  std::vector<FlowIx> level_flows;
  for (int level = 0; level <= max_level; ++level) {
    level_flows.clear();
    for (FlowIx f : comp_flows_) {
      const Flow& flow = flows_[size_t(f)];
      if (!by_level || flow.spec.level == level) level_flows.push_back(f);
    }
    if (level_flows.empty()) continue;
    for (FlowIx f : level_flows) {
      for (const FlowLink& fl : flows_[size_t(f)].spec.links) links_[size_t(fl.link)].users += fl.transfers;
    }
    heap.clear();
    // What is left of a link after subtracting shares can be a rounding
    // residue; below a billionth of the capacity it is nothing.
    auto share_of = [&](LinkIx li) {
      const Link& l = links_[size_t(li)];
      const double rem = l.rem > 1e-9 * Capacity(l) ? l.rem : 0.0;
      return rem / double(l.users);
    };
    for (LinkIx li : comp_links_) {
      const Link& l = links_[size_t(li)];
      if (l.users > 0 && l.rem < kInf) heap.push_back({share_of(li), li});
    }
    std::make_heap(heap.begin(), heap.end(), std::greater<Share>());
    size_t left = level_flows.size();
    while (left > 0 && !heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<Share>());
      const Share top = heap.back();
      heap.pop_back();
      const Link& tight = links_[size_t(top.second)];
      if (tight.users <= 0 || share_of(top.second) != top.first) continue;  // stale
      const double share = top.first;
      // Freeze every unfrozen flow of this level on the tight link.
      for (FlowIx f : tight.active) {
        Flow& flow = flows_[size_t(f)];
        if (flow.frozen || (by_level && flow.spec.level != level)) continue;
        flow.frozen = true;
        flow.rate = share;
        --left;
        for (const FlowLink& fl : flow.spec.links) {
          Link& l = links_[size_t(fl.link)];
          l.users -= fl.transfers;
          if (l.rem < kInf) {
            l.rem -= share * fl.transfers;
            if (l.users > 0) {
              heap.push_back({share_of(fl.link), fl.link});
              std::push_heap(heap.begin(), heap.end(), std::greater<Share>());
            }
          }
        }
      }
    }
    // Flows on unlimited links only (none here: Activate keeps those out).
    for (FlowIx f : level_flows) {
      Flow& flow = flows_[size_t(f)];
      if (!flow.frozen) {
        flow.frozen = true;
        flow.rate = 0;
      }
    }
    for (FlowIx f : level_flows) {
      for (const FlowLink& fl : flows_[size_t(f)].spec.links) links_[size_t(fl.link)].users = 0;
    }
  }
}

void Network::SolveMixed() {
  // A link's capacity still free; a rounding residue is none.
  auto free_of = [&](const Link& l) { return l.rem > 1e-9 * Capacity(l) ? l.rem : 0.0; };
  for (FlowIx f : comp_flows_) flows_[size_t(f)].rate = 0;
  size_t unfrozen = comp_flows_.size();
  std::vector<FlowIx>& growing = mixed_growing_;
  while (unfrozen > 0) {
    // The most urgent level still unfrozen on each link with class queues.
    for (LinkIx li : comp_links_) links_[size_t(li)].top_level = std::numeric_limits<int>::max();
    for (FlowIx f : comp_flows_) {
      const Flow& flow = flows_[size_t(f)];
      if (flow.frozen) continue;
      for (const FlowLink& fl : flow.spec.links) {
        Link& l = links_[size_t(fl.link)];
        if (l.spec.class_queues) l.top_level = std::min(l.top_level, flow.spec.level);
      }
    }
    // A flow grows while no more urgent flow still grows at any of its
    // class queues.
    growing.clear();
    for (FlowIx f : comp_flows_) {
      const Flow& flow = flows_[size_t(f)];
      if (flow.frozen) continue;
      bool first = true;
      for (const FlowLink& fl : flow.spec.links) {
        const Link& l = links_[size_t(fl.link)];
        first = first && (!l.spec.class_queues || l.top_level == flow.spec.level);
      }
      if (!first) continue;
      growing.push_back(f);
      for (const FlowLink& fl : flow.spec.links) links_[size_t(fl.link)].users += fl.transfers;
    }
    // The growing flows rise together until a link is full.
    double step = kInf;
    LinkIx full = -1;
    for (LinkIx li : comp_links_) {
      const Link& l = links_[size_t(li)];
      if (l.users <= 0 || l.rem == kInf) continue;
      const double share = free_of(l) / double(l.users);
      if (share < step) {
        step = share;
        full = li;
      }
    }
    for (LinkIx li : comp_links_) links_[size_t(li)].users = 0;
    if (full < 0) {
      for (FlowIx f : growing) flows_[size_t(f)].frozen = true;  // crosses nothing limited (Activate keeps those out)
      unfrozen -= growing.size();
      continue;
    }
    for (FlowIx f : growing) {
      Flow& flow = flows_[size_t(f)];
      flow.rate += step;
      for (const FlowLink& fl : flow.spec.links) {
        Link& l = links_[size_t(fl.link)];
        if (l.rem < kInf) l.rem -= step * fl.transfers;
      }
    }
    // Every flow on a full link stops where it is, growing or waiting.
    links_[size_t(full)].rem = 0;
    for (LinkIx li : comp_links_) {
      const Link& l = links_[size_t(li)];
      if (l.rem == kInf || free_of(l) > 0) continue;
      for (FlowIx f : l.active) {
        Flow& flow = flows_[size_t(f)];
        if (flow.frozen) continue;
        flow.frozen = true;
        --unfrozen;
      }
    }
  }
}

int64_t Network::NextEventNs() {
  Solve();
  while (!events_.empty()) {
    const Event& e = events_.top();
    bool stale = false;
    if (e.kind == EventKind::kFinish) {
      const Flow& flow = flows_[size_t(e.id)];
      stale = flow.state != FlowState::kActive || flow.version != e.version;
    } else if (e.kind == EventKind::kBucket) {
      stale = links_[size_t(e.id)].version != e.version;
    } else {
      stale = flows_[size_t(e.id)].state != FlowState::kWaiting || flows_[size_t(e.id)].version != e.version;
    }
    if (!stale) break;
    events_.pop();
  }
  const int64_t t = events_.empty() ? kNever : events_.top().t;
  return unlimited_started_.empty() ? t : now_;
}

void Network::AdvanceTo(int64_t t, std::vector<uint64_t>* finished) {
  now_ = std::max(now_, t);
  for (;;) {
    // Flows that cross nothing limited finish the moment they start.
    if (!unlimited_started_.empty()) {
      std::vector<FlowIx> done;
      done.swap(unlimited_started_);
      for (FlowIx f : done) Finish(f, finished);
      continue;
    }
    if (events_.empty() || events_.top().t > now_) break;
    const Event e = events_.top();
    events_.pop();
    switch (e.kind) {
      case EventKind::kStart: {
        Flow& flow = flows_[size_t(e.id)];
        if (flow.state == FlowState::kWaiting && flow.queued_head && flow.version == e.version) {
          if (flow.start_ns > now_) {
            Push(flow.start_ns, EventKind::kStart, e.id, flow.version);
          } else {
            Activate(e.id);
          }
        }
        break;
      }
      case EventKind::kFinish: {
        Flow& flow = flows_[size_t(e.id)];
        if (flow.state != FlowState::kActive || flow.version != e.version) break;
        flow.left = std::max(flow.left - flow.rate * double(now_ - flow.since) * 1e-9, 0.0);
        flow.since = now_;
        if (flow.left > kDoneBytes * std::max(1.0, flow.spec.bytes * 1e-9)) {
          // Rounding left a little: finish it when that is through.
          const int64_t ns = NsFor(flow.left, flow.rate);
          if (ns != kNever) Push(now_ + std::max<int64_t>(ns, 1), EventKind::kFinish, e.id, flow.version);
          break;
        }
        Finish(e.id, finished);
        break;
      }
      case EventKind::kBucket: {
        Link& l = links_[size_t(e.id)];
        if (l.version != e.version) break;
        SettleTokens(l);
        l.at_line = !l.at_line;
        if (l.at_line) l.tokens = std::max(l.tokens, kFrameBytes);
        if (!l.at_line) l.tokens = 0;
        ++stats_.bucket_changes;
        MarkDirty(e.id);
        break;
      }
    }
  }
}

double Network::LinkBytes(LinkIx l) const { return links_[size_t(l)].bytes.At(now_); }

double Network::CounterBytes(int counter) const { return counters_[size_t(counter)].At(now_); }

}  // namespace trirace::sim
