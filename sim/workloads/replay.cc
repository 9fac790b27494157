#include "sim/workloads/replay.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/workloads/replay_trace.h"

namespace trirace::sim {
namespace {

using replay_internal::kNoTime;
using replay_internal::RankTrace;
using replay_internal::ReadTrace;
using replay_internal::TraceComm;
using replay_internal::TraceOp;
using replay_internal::TraceSpan;

// interpose/comm/comm_state.h RoleName's words.
TrafficClass ClassOfRole(const std::string& role) {
  if (role == "data-parallel") return TrafficClass::kDense;
  if (role == "pipeline") return TrafficClass::kP2P;
  if (role == "expert") return TrafficClass::kSparse;
  return TrafficClass::kOther;
}

// Per iteration the slowest rank's time between its stamps (or marks).
std::vector<double> MeasuredIterations(const std::vector<RankTrace>& traces, bool by_stamps) {
  std::vector<double> ms;
  for (const RankTrace& t : traces) {
    std::vector<int64_t> at;
    if (by_stamps) {
      for (const TraceSpan& s : t.stamps) {
        if (size_t(s.stamp) >= at.size()) at.resize(size_t(s.stamp) + 1, 0);
        at[size_t(s.stamp)] = s.start_ns;
      }
    } else {
      for (const replay_internal::IterationMark& m : t.iterations) at.push_back(m.t_ns);
    }
    for (size_t k = 1; k < at.size(); ++k) {
      if (k > ms.size()) ms.resize(k, 0);
      ms[k - 1] = std::max(ms[k - 1], double(at[k] - at[k - 1]) / 1e6);
    }
  }
  return ms;
}

}  // namespace

absl::StatusOr<Workload> ReplayWorkload(const std::string& dir, ReplayStats* stats) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("--replay ", dir, ": not a folder, expected the folder of TRIRACE_TRACE files"));
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat("--replay ", dir, ": no *.json trace files, expected one per rank"));
  }
  std::vector<RankTrace> traces;
  for (const fs::path& p : files) {
    absl::StatusOr<RankTrace> t = ReadTrace(p);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--replay ", t.status().message()));
    traces.push_back(*std::move(t));
  }
  const auto error = [](absl::string_view where, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("--replay ", where, ": ", what));
  };
  // Ranks: as the traces say, else in file order; 0..n-1 exactly once.
  const int n = int(traces.size());
  std::vector<int> file_of(size_t(n), -1);
  for (int i = 0; i < n; ++i) {
    int r = traces[size_t(i)].rank;
    if (r < 0 || r >= n || file_of[size_t(r)] >= 0) {
      return error(absl::StrCat(dir, ": ", traces[size_t(i)].file),
                   absl::StrCat("rank ", r, ", expected one of 0..", n - 1, " once (one trace per rank)"));
    }
    file_of[size_t(r)] = i;
  }
  Workload w;
  w.name = absl::StrCat("replay of ", dir);
  // Comms by id: members by comm rank, the same size in every trace, each
  // comm rank one global rank and each global rank one comm rank.
  std::map<std::string, int> comm_of_id;
  std::vector<std::string> described_by;  // the file that first described each comm
  for (int r = 0; r < n; ++r) {
    const RankTrace& t = traces[size_t(file_of[size_t(r)])];
    for (const auto& [index, c] : t.comms) {
      const std::string where = absl::StrCat(t.path, ": otherData \"comm ", index, "\"");
      if (c.nranks > n) {
        return error(where, absl::StrCat("comm ", c.id, " of ", c.nranks, " ranks but the folder holds ", n,
                                         " traces (a rank has no trace in the folder), expected every rank's trace"));
      }
      auto [it, added] = comm_of_id.try_emplace(c.id, int(w.comms.size()));
      if (added) {
        w.comms.push_back({absl::StrCat("comm ", c.id, " (", c.role, ")"), std::vector<int>(size_t(c.nranks), -1),
                           ClassOfRole(c.role), c.role == "pipeline"});
        described_by.push_back(t.path);
      }
      CommSpec& spec = w.comms[size_t(it->second)];
      if (int(spec.ranks.size()) != c.nranks) {
        return error(where, absl::StrCat("comm ", c.id, " of ", c.nranks, " ranks, but ", described_by[size_t(it->second)],
                                         " says ", spec.ranks.size(), ", expected the same in every trace"));
      }
      const int holder = spec.ranks[size_t(c.rank)];
      if (holder >= 0 && holder != r) {
        return error(where, absl::StrCat("rank ", c.rank, " of comm ", c.id, ", which rank ", holder,
                                         "'s trace is too, expected each comm rank in one trace"));
      }
      const auto other = std::find(spec.ranks.begin(), spec.ranks.end(), r);
      if (other != spec.ranks.end() && other - spec.ranks.begin() != c.rank) {
        return error(where, absl::StrCat("rank ", c.rank, " of comm ", c.id, ", which this trace also is rank ",
                                         other - spec.ranks.begin(), " of, expected one comm rank per trace"));
      }
      spec.ranks[size_t(c.rank)] = r;
    }
  }
  for (const CommSpec& c : w.comms) {
    for (size_t i = 0; i < c.ranks.size(); ++i) {
      if (c.ranks[i] < 0) {
        return error(dir, absl::StrCat(c.name, " rank ", i, " has no trace in the folder, expected every rank's trace"));
      }
    }
  }
  // A trace's op as the workload's call: its comm and peer checked.
  const auto call_of = [&](const RankTrace& t, const TraceOp& o) -> absl::StatusOr<NcclCall> {
    auto comm = t.comms.find(o.comm_index);
    if (comm == t.comms.end()) {
      return error(o.where, absl::StrCat("an op on comm index ", o.comm_index, " (tid / 16), expected a comm that ",
                                         "otherData describes (\"comm ", o.comm_index, "\")"));
    }
    const TraceComm& tc = comm->second;
    if (IsPointToPoint(o.func) ? (o.peer < 0 || o.peer >= tc.nranks || o.peer == tc.rank) : o.peer >= tc.nranks) {
      return error(o.where, absl::StrCat(IsPointToPoint(o.func) ? "peer " : "root ", o.peer, " on comm ", tc.id,
                                         " of ", tc.nranks, " ranks (this trace is rank ", tc.rank,
                                         "), expected a", IsPointToPoint(o.func) ? "nother" : "", " rank of the comm"));
    }
    NcclCall c;
    c.func = o.func;
    c.comm = comm_of_id[tc.id];
    c.bytes = o.bytes;
    c.peer = o.peer;
    c.traffic_class = o.cls;
    c.tag = o.tag;
    return c;
  };
  // Jobs, as the traces name them (several: a shared cluster's run).
  std::vector<int> job_of_rank;
  for (int r = 0; r < n; ++r) {
    const std::string& job = traces[size_t(file_of[size_t(r)])].job;
    auto at = std::find(w.job_names.begin(), w.job_names.end(), job);
    if (at == w.job_names.end()) at = w.job_names.insert(w.job_names.end(), job);
    job_of_rank.push_back(int(at - w.job_names.begin()));
  }
  if (w.job_names.size() > 1) {
    w.job_of_rank = std::move(job_of_rank);
  } else {
    w.job_names.clear();
  }
  const bool by_dependencies =
      std::all_of(traces.begin(), traces.end(), [](const RankTrace& t) { return replay_internal::HasStreamTiming(t); });
  if (stats != nullptr) {
    *stats = ReplayStats();
    stats->by_dependencies = by_dependencies;
  }
  int iterations = 1;
  for (int r = 0; r < n; ++r) {
    const RankTrace& t = traces[size_t(file_of[size_t(r)])];
    if (!by_dependencies) {
      iterations = std::max(iterations, int(t.iterations.size()));
      continue;
    }
    // By dependencies, the stamps say where iterations end: every rank the same count.
    int last = 0;
    if (absl::Status s = replay_internal::CheckStamps(t, &last); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--replay ", s.message()));
    }
    if (r > 0 && last != iterations) {
      return error(t.path, absl::StrCat("stamps 0..", last, " but rank 0's trace has 0..", iterations,
                                        ", expected the same iterations in every trace"));
    }
    iterations = last;
  }
  w.iterations = iterations;
  w.warmup = iterations > 2 ? 1 : 0;
  if (std::all_of(traces.begin(), traces.end(), [](const RankTrace& t) { return t.warmup >= 0; })) {
    w.warmup = std::min(traces.front().warmup, iterations - 1);
  }
  if (stats != nullptr) stats->measured_iteration_ms = MeasuredIterations(traces, by_dependencies);
  for (int r = 0; r < n; ++r) {
    const RankTrace& t = traces[size_t(file_of[size_t(r)])];
    if (by_dependencies) {
      // Times of the simulator's own traces are exact to the nanosecond.
      const int64_t tolerance_ns = t.producer == "trirace sim" ? 2 : 10'000;
      ProgramBuilder b(replay_internal::StreamCount(t));
      ReplayStats counted;
      absl::Status built = replay_internal::BuildFromDependencies(
          t, [&](const TraceOp& o) { return call_of(t, o); }, tolerance_ns, &b, stats != nullptr ? stats : &counted);
      if (!built.ok()) return built;
      w.ranks.push_back(b.Take());
      continue;
    }
    std::map<int, int> stream_of_comm;
    for (const TraceOp& op : t.ops) stream_of_comm.try_emplace(op.comm_index, int(stream_of_comm.size()) + 1);
    ProgramBuilder b(int(stream_of_comm.size()) + 1);
    b.Stamp(0, 0);
    // Ops by end time, to find those that finished before each event.
    std::vector<size_t> by_end(t.ops.size());
    for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
    std::stable_sort(by_end.begin(), by_end.end(), [&](size_t x, size_t y) { return t.ops[x].end_ns < t.ops[y].end_ns; });
    size_t ended = 0;
    int64_t last_event = kNoTime;
    // Moves the compute stream to time `at`: it waits for the ops the trace
    // shows finished by then, and computes for the rest of the gap.
    auto advance_to = [&](int64_t at, size_t calls_issued) {
      if (last_event == kNoTime) last_event = at;
      while (ended < by_end.size() && t.ops[by_end[ended]].end_ns <= at) {
        const size_t j = by_end[ended];
        if (j >= calls_issued) break;  // not called yet: a later event's
        b.Wait(0, int64_t(j));
        last_event = std::max(last_event, t.ops[j].end_ns);
        ++ended;
      }
      if (at > last_event) b.Compute(0, at - last_event);
      last_event = std::max(last_event, at);
    };
    size_t next_iteration = 0;
    for (size_t i = 0; i <= t.ops.size();) {
      // Iteration marks up to this call (all that are left after the last).
      const int64_t call_at = i < t.ops.size() ? t.ops[i].start_ns : std::numeric_limits<int64_t>::max();
      while (next_iteration < t.iterations.size() && t.iterations[next_iteration].t_ns <= call_at) {
        advance_to(t.iterations[next_iteration].t_ns, i);
        if (next_iteration > 0) b.Stamp(0, int(next_iteration));
        b.IterationBegin(t.iterations[next_iteration].iteration);
        ++next_iteration;
      }
      if (i == t.ops.size()) break;
      const TraceOp& op = t.ops[i];
      advance_to(op.start_ns, i);
      // The call (with the rest of its user group).
      std::vector<NcclCall> calls;
      size_t k = i;
      for (; k < t.ops.size() && (k == i || (op.group != 0 && t.ops[k].group == op.group)); ++k) {
        absl::StatusOr<NcclCall> c = call_of(t, t.ops[k]);
        if (!c.ok()) return c.status();
        calls.push_back(*c);
      }
      const int stream = stream_of_comm[op.comm_index];
      b.Record(0, -1 - int64_t(i));
      b.Wait(stream, -1 - int64_t(i));
      b.Comm(stream, std::move(calls));
      for (size_t j = i; j < k; ++j) b.Record(stream, int64_t(j));
      i = k;
    }
    // The run ends when every stream has.
    for (const auto& [index, stream] : stream_of_comm) {
      b.Record(stream, -2 - int64_t(t.ops.size()) - stream);
      b.Wait(0, -2 - int64_t(t.ops.size()) - stream);
    }
    b.Stamp(0, iterations);
    w.ranks.push_back(b.Take());
  }
  return w;
}

}  // namespace trirace::sim
