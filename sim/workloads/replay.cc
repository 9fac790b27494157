#include "sim/workloads/replay.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace trirace::sim {
namespace {

using json = nlohmann::json;

struct TraceOp {
  NcclFunc func = NcclFunc::kAllReduce;
  int comm_index = 0;
  uint64_t bytes = 0;
  int peer = -1;  // comm rank (Send/Recv), root (rooted calls)
  uint64_t group = 0;
  TrafficClass cls = TrafficClass::kOther;
  trirace_tag_t tag = TRIRACE_TAG_INIT;
  int64_t start_ns = 0, end_ns = 0;
  int chunk = -1, chunks = -1;
};

struct TraceComm {
  std::string id;
  int rank = 0, nranks = 0;
  std::string role;
};

struct RankTrace {
  std::string file;
  int rank = -1;
  std::vector<TraceOp> ops;
  std::map<int, TraceComm> comms;  // by comm index
  std::vector<std::pair<int64_t, int64_t>> iterations;  // (time, iteration) of each begin mark
};

std::optional<NcclFunc> FuncFromName(const std::string& name) {
  for (int f = 0; f < kNumNcclFuncs; ++f) {
    if (name == NcclFuncName(NcclFunc(f))) return NcclFunc(f);
  }
  return std::nullopt;
}

TrafficClass ClassFromName(const std::string& name) {
  if (name == "P2P") return TrafficClass::kP2P;
  if (name == "SPARSE") return TrafficClass::kSparse;
  if (name == "DENSE") return TrafficClass::kDense;
  return TrafficClass::kOther;
}

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

int64_t Ns(double us) { return int64_t(us * 1e3); }

absl::StatusOr<RankTrace> ParseTrace(const std::filesystem::path& path);

// A trace whose values have other types than the shim writes is an error
// naming the file, not an exception.
absl::StatusOr<RankTrace> ReadTrace(const std::filesystem::path& path) {
  try {
    return ParseTrace(path);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a TriRace trace (", e.what(), ")"));
  }
}

absl::StatusOr<RankTrace> ParseTrace(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot read"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    // A rank that died leaves its trace without the closing part.
    while (!text.empty() && (std::isspace(static_cast<unsigned char>(text.back())) || text.back() == ',')) text.pop_back();
    doc = json::parse(text + "]}", nullptr, false);
  }
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a TriRace trace (no traceEvents array)"));
  }
  RankTrace t;
  t.file = path.filename().string();
  for (const json& e : doc["traceEvents"]) {
    if (!e.is_object()) continue;
    const std::string name = e.value("name", "");
    const std::string cat = e.value("cat", "");
    if (e.value("ph", "") == "M" && name == "process_name") {
      const std::string pname = e.contains("args") ? e["args"].value("name", "") : "";
      int r;
      std::vector<std::string> words = absl::StrSplit(pname, ' ');
      if (words.size() >= 2 && words[0] == "rank" && absl::SimpleAtoi(words[1], &r)) t.rank = r;
      continue;
    }
    if (cat == "iteration" && absl::EndsWith(name, " begin") && e.contains("args")) {
      t.iterations.push_back({Ns(e.value("ts", 0.0)), e["args"].value("iteration", int64_t(0))});
      continue;
    }
    if (cat != "op" || e.value("ph", "") != "X" || !e.contains("args")) continue;
    const json& a = e["args"];
    std::optional<NcclFunc> func = FuncFromName(a.value("func", name));
    if (!func) continue;
    TraceOp op;
    op.func = *func == NcclFunc::kBcast ? NcclFunc::kBroadcast : *func;
    op.comm_index = e.value("tid", 0) / 16;
    op.bytes = a.value("bytes", uint64_t(0));
    if (a.contains("peer")) op.peer = a["peer"].get<int>();
    if (a.contains("root")) op.peer = a["root"].get<int>();
    op.group = a.value("group", uint64_t(0));
    op.cls = ClassFromName(a.value("class", "OTHER"));
    op.start_ns = Ns(e.value("ts", 0.0));
    op.end_ns = op.start_ns + Ns(e.value("dur", 0.0));
    op.chunk = a.value("chunk", -1);
    op.chunks = a.value("chunks", -1);
    if (a.contains("tag") && a["tag"].is_object()) {
      const json& g = a["tag"];
      op.tag.layer = g.value("layer", TRIRACE_UNSET);
      op.tag.stage = g.value("stage", TRIRACE_UNSET);
      op.tag.micro_batch = g.value("micro_batch", TRIRACE_UNSET);
      op.tag.phase = g.value("phase", TRIRACE_UNSET);
      op.tag.iteration = g.value("iteration", int64_t(TRIRACE_UNSET));
      op.tag.priority = g.value("priority", TRIRACE_UNSET);
    }
    t.ops.push_back(op);
  }
  if (doc.contains("otherData") && doc["otherData"].is_object()) {
    for (const auto& [key, value] : doc["otherData"].items()) {
      int index;
      if (!absl::StartsWith(key, "comm ") || !absl::SimpleAtoi(key.substr(5), &index) || !value.is_string()) continue;
      TraceComm c;
      for (absl::string_view field : absl::StrSplit(value.get<std::string>(), ' ')) {
        if (absl::StartsWith(field, "id=")) c.id = std::string(field.substr(3));
        if (absl::StartsWith(field, "role=")) c.role = std::string(field.substr(5));
        if (absl::StartsWith(field, "rank=")) {
          std::vector<std::string> rn = absl::StrSplit(field.substr(5), '/');
          if (rn.size() == 2) {
            (void)absl::SimpleAtoi(rn[0], &c.rank);
            (void)absl::SimpleAtoi(rn[1], &c.nranks);
          }
        }
      }
      if (!c.id.empty()) t.comms[index] = c;
    }
  }
  if (t.rank < 0) {
    // trace.<rank>.json and the like: the last number in the file name.
    std::string digits;
    for (char ch : t.file) {
      if (std::isdigit(static_cast<unsigned char>(ch))) {
        digits += ch;
      } else if (!digits.empty() && ch == '.') {
        break;
      } else {
        digits.clear();
      }
    }
    int r;
    if (!digits.empty() && absl::SimpleAtoi(digits, &r)) t.rank = r;
  }
  std::stable_sort(t.ops.begin(), t.ops.end(), [](const TraceOp& x, const TraceOp& y) { return x.start_ns < y.start_ns; });
  // A schedule mode's chunks of one call become the call again.
  std::vector<TraceOp> merged;
  for (const TraceOp& op : t.ops) {
    if (op.chunk > 0 && !merged.empty() && merged.back().chunks == op.chunks && merged.back().comm_index == op.comm_index) {
      merged.back().bytes += op.bytes;
      merged.back().end_ns = std::max(merged.back().end_ns, op.end_ns);
      continue;
    }
    merged.push_back(op);
  }
  t.ops = std::move(merged);
  return t;
}

// interpose/comm_state.h RoleName's words.
TrafficClass ClassOfRole(const std::string& role) {
  if (role == "data-parallel") return TrafficClass::kDense;
  if (role == "pipeline") return TrafficClass::kP2P;
  if (role == "expert") return TrafficClass::kSparse;
  return TrafficClass::kOther;
}

}  // namespace

absl::StatusOr<Workload> ReplayWorkload(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat("--replay ", dir, ": not a folder"));
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return absl::NotFoundError(absl::StrCat("--replay ", dir, ": no *.json trace files"));
  std::vector<RankTrace> traces;
  for (const fs::path& p : files) {
    absl::StatusOr<RankTrace> t = ReadTrace(p);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--replay ", t.status().message()));
    traces.push_back(*std::move(t));
  }
  // Ranks: as the traces say, else in file order; 0..n-1 exactly once.
  const int n = int(traces.size());
  std::vector<int> file_of(size_t(n), -1);
  for (int i = 0; i < n; ++i) {
    int r = traces[size_t(i)].rank;
    if (r < 0 || r >= n || file_of[size_t(r)] >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--replay ", dir, ": ", traces[size_t(i)].file, " is rank ", r,
                                                     ", not one of 0..", n - 1, " once (one trace per rank)"));
    }
    file_of[size_t(r)] = i;
  }
  Workload w;
  w.name = absl::StrCat("replay of ", dir);
  // Comms by id: members by comm rank.
  std::map<std::string, int> comm_of_id;
  std::vector<std::vector<int>> members;
  for (int r = 0; r < n; ++r) {
    for (const auto& [index, c] : traces[size_t(file_of[size_t(r)])].comms) {
      auto [it, added] = comm_of_id.try_emplace(c.id, int(w.comms.size()));
      if (added) {
        w.comms.push_back({absl::StrCat("comm ", c.id, " (", c.role, ")"), std::vector<int>(size_t(c.nranks), -1),
                           ClassOfRole(c.role), c.role == "pipeline"});
      }
      CommSpec& spec = w.comms[size_t(it->second)];
      if (c.rank < 0 || c.rank >= int(spec.ranks.size())) {
        return absl::InvalidArgumentError(absl::StrCat("--replay ", dir, ": rank ", r, " says it is rank ", c.rank,
                                                       " of comm ", c.id, " with ", spec.ranks.size(), " ranks"));
      }
      spec.ranks[size_t(c.rank)] = r;
    }
  }
  for (const CommSpec& c : w.comms) {
    for (size_t i = 0; i < c.ranks.size(); ++i) {
      if (c.ranks[i] < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--replay ", dir, ": ", c.name, " rank ", i,
                                                       " has no trace in the folder (every rank's trace is needed)"));
      }
    }
  }
  int iterations = 1;
  for (const RankTrace& t : traces) iterations = std::max(iterations, int(t.iterations.size()));
  w.iterations = iterations;
  w.warmup = iterations > 2 ? 1 : 0;
  for (int r = 0; r < n; ++r) {
    const RankTrace& t = traces[size_t(file_of[size_t(r)])];
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
      while (next_iteration < t.iterations.size() && t.iterations[next_iteration].first <= call_at) {
        advance_to(t.iterations[next_iteration].first, i);
        if (next_iteration > 0) b.Stamp(0, int(next_iteration));
        b.IterationBegin(t.iterations[next_iteration].second);
        ++next_iteration;
      }
      if (i == t.ops.size()) break;
      const TraceOp& op = t.ops[i];
      advance_to(op.start_ns, i);
      // The call (with the rest of its user group).
      std::vector<NcclCall> calls;
      size_t k = i;
      for (; k < t.ops.size() && (k == i || (op.group != 0 && t.ops[k].group == op.group)); ++k) {
        const TraceOp& o = t.ops[k];
        auto comm = t.comms.find(o.comm_index);
        if (comm == t.comms.end()) {
          return absl::InvalidArgumentError(absl::StrCat("--replay ", t.file, ": an op on comm index ", o.comm_index,
                                                         ", which otherData does not describe"));
        }
        NcclCall c;
        c.func = o.func;
        c.comm = comm_of_id[comm->second.id];
        c.bytes = o.bytes;
        c.peer = o.peer;
        c.traffic_class = o.cls;
        c.tag = o.tag;
        calls.push_back(c);
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
