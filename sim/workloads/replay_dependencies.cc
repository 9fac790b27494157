// The replay of stream-timed traces (replay_trace.h): items in host order,
// each placed after what its times say released it.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "sim/workloads/replay_trace.h"

namespace trirace::sim::replay_internal {
namespace {

enum class ItemKind { kOps, kCompute, kStamp, kMark };

struct Item {
  ItemKind kind = ItemKind::kOps;
  int64_t seq = 0;
  int stream = 0;  // the builder's stream
  int64_t call_ns = 0, start_ns = 0, end_ns = 0;
  size_t first = 0, count = 0;  // kOps: ops[first, first + count); kCompute/kStamp: the span
  int64_t value = 0;            // kMark: the iteration
};

std::map<int, int> StreamIndex(const RankTrace& t) {
  std::set<int> ids;
  for (const TraceOp& op : t.ops) ids.insert(op.timing.stream);
  for (const TraceSpan& s : t.computes) ids.insert(s.timing.stream);
  for (const TraceSpan& s : t.stamps) ids.insert(s.timing.stream);
  std::map<int, int> index;
  for (int id : ids) index.emplace(id, int(index.size()));
  return index;
}

}  // namespace

bool HasStreamTiming(const RankTrace& t) {
  if (t.stamps.empty()) return false;
  const auto known = [](const auto& x) { return x.timing.known(); };
  return std::all_of(t.ops.begin(), t.ops.end(), known) && std::all_of(t.computes.begin(), t.computes.end(), known) &&
         std::all_of(t.stamps.begin(), t.stamps.end(), known);
}

absl::Status CheckStamps(const RankTrace& t, int* last) {
  std::vector<const TraceSpan*> stamps;
  for (const TraceSpan& s : t.stamps) stamps.push_back(&s);
  std::stable_sort(stamps.begin(), stamps.end(),
                   [](const TraceSpan* x, const TraceSpan* y) { return x->timing.seq < y->timing.seq; });
  const auto invalid = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(t.path, ": ", what, ", expected stamps 0, 1, ... N (N >= 1) in the "
                                                   "order of their step, stamp 0 before every op and compute slice"));
  };
  for (size_t k = 0; k < stamps.size(); ++k) {
    if (stamps[k]->stamp != int(k)) return invalid(absl::StrCat("stamp ", stamps[k]->stamp, " is the ", k + 1, "th"));
  }
  if (stamps.size() < 2) return invalid(absl::StrCat(stamps.size(), " stamp(s)"));
  const int64_t first = stamps.front()->timing.seq;
  for (const TraceOp& op : t.ops) {
    if (op.timing.seq <= first) return invalid(absl::StrCat(op.where, " at step ", op.timing.seq, ", before stamp 0"));
  }
  for (const TraceSpan& c : t.computes) {
    if (c.timing.seq <= first) return invalid(absl::StrCat("a compute slice at step ", c.timing.seq, ", before stamp 0"));
  }
  *last = int(stamps.size()) - 1;
  return absl::OkStatus();
}

int StreamCount(const RankTrace& t) { return std::max<int>(1, int(StreamIndex(t).size())); }

absl::Status BuildFromDependencies(const RankTrace& t,
                                   absl::FunctionRef<absl::StatusOr<NcclCall>(const TraceOp&)> call_of,
                                   int64_t tolerance_ns, ProgramBuilder* b, ReplayStats* stats) {
  const std::map<int, int> stream_of = StreamIndex(t);
  std::vector<Item> items;
  // Ops of one host step (a group's calls) are one item.
  std::vector<size_t> by_seq(t.ops.size());
  for (size_t i = 0; i < by_seq.size(); ++i) by_seq[i] = i;
  std::stable_sort(by_seq.begin(), by_seq.end(),
                   [&](size_t x, size_t y) { return t.ops[x].timing.seq < t.ops[y].timing.seq; });
  std::vector<size_t> op_order;  // op indices, items' ranges index into this
  for (size_t k = 0; k < by_seq.size(); ++k) {
    const TraceOp& op = t.ops[by_seq[k]];
    if (!items.empty() && items.back().kind == ItemKind::kOps && items.back().seq == op.timing.seq) {
      Item& it = items.back();
      ++it.count;
      it.end_ns = std::max(it.end_ns, op.end_ns);
    } else {
      items.push_back({ItemKind::kOps, op.timing.seq, stream_of.at(op.timing.stream),
                       op.start_ns - op.timing.queued_ns, op.start_ns, op.end_ns, op_order.size(), 1, 0});
    }
    op_order.push_back(by_seq[k]);
  }
  for (size_t i = 0; i < t.computes.size(); ++i) {
    const TraceSpan& s = t.computes[i];
    items.push_back({ItemKind::kCompute, s.timing.seq, stream_of.at(s.timing.stream), s.start_ns - s.timing.queued_ns,
                     s.start_ns, s.end_ns, i, 1, 0});
  }
  for (size_t i = 0; i < t.stamps.size(); ++i) {
    const TraceSpan& s = t.stamps[i];
    items.push_back({ItemKind::kStamp, s.timing.seq, stream_of.at(s.timing.stream), s.start_ns - s.timing.queued_ns,
                     s.start_ns, s.start_ns, i, 1, 0});
  }
  for (const IterationMark& m : t.iterations) {
    if (m.seq < 0) continue;  // a mark without its host step: its stamps say where iterations are
    items.push_back({ItemKind::kMark, m.seq, 0, m.t_ns, m.t_ns, m.t_ns, 0, 0, m.iteration});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.seq < y.seq; });

  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Item& it : items) origin = std::min(origin, it.call_ns);
  int64_t host = origin;
  std::vector<int64_t> stream_end(stream_of.size(), origin);
  std::multimap<int64_t, size_t> ended;  // end time -> item, of the items placed so far
  // Per stream (but `skip_stream`), the latest-ending item placed so far
  // that ended within the tolerance of `at`.
  const auto ended_at = [&](int64_t at, int skip_stream) {
    std::map<int, size_t> latest;  // stream -> item
    for (auto it = ended.lower_bound(at - tolerance_ns); it != ended.end() && it->first <= at + tolerance_ns; ++it) {
      const Item& q = items[it->second];
      if (q.stream == skip_stream) continue;
      auto [at_stream, added] = latest.try_emplace(q.stream, it->second);
      if (!added && items[at_stream->second].end_ns <= q.end_ns) at_stream->second = it->second;
    }
    return latest;
  };
  const auto key = [](size_t item) { return int64_t(item); };
  for (size_t i = 0; i < items.size(); ++i) {
    Item& item = items[i];
    ++stats->items;
    // The host: a gap before this call is a wait for what ended then, or time spent.
    if (item.call_ns > host + tolerance_ns) {
      std::map<int, size_t> released = ended_at(item.call_ns, -1);
      if (!released.empty()) {
        size_t latest = released.begin()->second;
        for (const auto& [stream, q] : released) {
          if (items[q].end_ns > items[latest].end_ns) latest = q;
        }
        b->HostWait(key(latest));
        ++stats->host_waits;
      } else {
        b->HostSpend(item.call_ns - host);
        ++stats->host_spent;
      }
    }
    host = std::max(host, item.call_ns);
    if (item.kind == ItemKind::kMark) {
      b->IterationBegin(item.value);
      continue;
    }
    // The stream: a start later than both its previous item's end and the
    // call waited for another stream.
    const int s = item.stream;
    const int64_t ready = std::max(stream_end[size_t(s)], item.call_ns);
    std::vector<size_t> released;
    for (const auto& [stream, q] : ended_at(item.start_ns, s)) released.push_back(q);
    std::sort(released.begin(), released.end(), [&](size_t x, size_t y) { return items[x].end_ns > items[y].end_ns; });
    if (released.size() > kMaxWaitsPerItem) released.resize(kMaxWaitsPerItem);
    for (size_t q : released) b->Wait(s, key(q));
    stats->stream_waits += int64_t(released.size());
    if (item.start_ns > ready + tolerance_ns && released.empty()) {
      b->Compute(s, item.start_ns - ready);
      ++stats->unexplained;
    }
    switch (item.kind) {
      case ItemKind::kOps: {
        std::vector<NcclCall> calls;
        for (size_t k = item.first; k < item.first + item.count; ++k) {
          absl::StatusOr<NcclCall> c = call_of(t.ops[op_order[k]]);
          if (!c.ok()) return c.status();
          calls.push_back(*c);
        }
        b->Comm(s, std::move(calls));
        break;
      }
      case ItemKind::kCompute: b->Compute(s, item.end_ns - item.start_ns); break;
      case ItemKind::kStamp: b->Stamp(s, t.stamps[item.first].stamp); break;
      case ItemKind::kMark: break;
    }
    b->Record(s, key(i));
    stream_end[size_t(s)] = std::max(stream_end[size_t(s)], item.end_ns);
    ended.emplace(item.end_ns, i);
  }
  return absl::OkStatus();
}

}  // namespace trirace::sim::replay_internal
