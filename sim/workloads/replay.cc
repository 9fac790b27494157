#include "sim/workloads/replay.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
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

// What a trace may hold. Times are microseconds since the epoch (the shim
// writes about 1.8e15 today); below 4e15 us every time, sum and gap in
// nanoseconds fits an int64_t. Bytes up to 2^48 per call (256 TiB).
constexpr double kMaxMicros = 4e15;
constexpr int64_t kMaxBytes = int64_t{1} << 48;

struct TraceOp {
  NcclFunc func = NcclFunc::kAllReduce;
  int comm_index = 0;
  uint64_t bytes = 0;
  int peer = -1;  // comm rank (Send/Recv), root (rooted calls); -1 none
  uint64_t group = 0;
  TrafficClass cls = TrafficClass::kOther;
  trirace_tag_t tag = TRIRACE_TAG_INIT;
  int64_t start_ns = 0, end_ns = 0;
  int chunk = -1, chunks = -1;
  std::string where;  // "trace.0.json:12: traceEvents[10] (Send)", for errors
};

struct TraceComm {
  std::string id;
  int rank = 0, nranks = 0;
  std::string role;
};

struct RankTrace {
  std::string path;  // for errors
  std::string file;  // its name, where a rank number may be
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

absl::Status Invalid(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// A value as the file has it, shortened, for an error.
std::string Shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// The string at `key`, or "" when absent or of another type (events of
// other tools are skipped, not refused).
std::string Str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

// An integer at `key` in lo..hi; `fallback` when absent.
absl::StatusOr<int64_t> Int(const json& o, const char* key, int64_t lo, int64_t hi, int64_t fallback,
                            const std::string& where) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t(hi)) return int64_t(it->get<uint64_t>());
  if (it->is_number_integer() && !it->is_number_unsigned() && it->get<int64_t>() >= lo && it->get<int64_t>() <= hi) {
    return it->get<int64_t>();
  }
  return Invalid(where, absl::StrCat(key, " is ", Shown(*it), ", expected an integer in ", lo, "..", hi));
}

// A time in microseconds at `key` (0 when absent), as nanoseconds.
absl::StatusOr<int64_t> Micros(const json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end()) return 0;
  const double us = it->is_number() ? it->get<double>() : -1;
  if (!(us >= 0 && us <= kMaxMicros)) {
    return Invalid(where, absl::StrCat(key, " is ", Shown(*it), ", expected microseconds in 0..", kMaxMicros));
  }
  return int64_t(us * 1e3);
}

// The line (from 1) on which each element of the top-level "traceEvents"
// array starts, for errors: nlohmann-json keeps no positions. `text` is
// valid JSON (it parsed), so strings, nesting and commas are all there is.
std::vector<int> EventLines(absl::string_view text) {
  std::vector<int> found, current;
  int line = 1, depth = 0;
  bool in_string = false, in_events = false, expect_element = false;
  size_t string_start = 0;
  absl::string_view last_string, key;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        last_string = text.substr(string_start, i - string_start);
      }
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (in_events && depth == 2 && expect_element && c != ']') current.push_back(line);
    expect_element = false;
    switch (c) {
      case '"':
        in_string = true;
        string_start = i + 1;
        break;
      case ':':
        if (depth == 1) key = last_string;
        break;
      case ',':
        if (depth == 1) key = {};
        expect_element = in_events && depth == 2;
        break;
      case '[':
      case '{':
        if (depth == 1 && c == '[' && key == "traceEvents") {
          in_events = true;
          expect_element = true;
          current.clear();
        }
        ++depth;
        break;
      case ']':
      case '}':
        --depth;
        if (in_events && depth == 1) {
          in_events = false;
          found = current;  // the last traceEvents key wins, as in the parser
        }
        break;
      default:
        break;
    }
  }
  return found;
}

// The line of byte `offset` (from 1).
size_t LineOf(absl::string_view text, size_t offset) {
  return 1 + size_t(std::count(text.begin(), text.begin() + std::min(offset, text.size()), '\n'));
}

// A comm as otherData's "comm <index>" describes it:
// "id=<hex> rank=<r>/<n> role=<role> ...".
absl::StatusOr<TraceComm> ParseComm(const std::string& text, const std::string& where) {
  TraceComm c;
  bool rank_read = false;
  for (absl::string_view field : absl::StrSplit(text, ' ')) {
    if (absl::ConsumePrefix(&field, "id=")) c.id = std::string(field);
    if (absl::ConsumePrefix(&field, "role=")) c.role = std::string(field);
    if (absl::ConsumePrefix(&field, "rank=")) {
      std::vector<absl::string_view> rn = absl::StrSplit(field, '/');
      rank_read = rn.size() == 2 && absl::SimpleAtoi(rn[0], &c.rank) && absl::SimpleAtoi(rn[1], &c.nranks);
    }
  }
  if (c.id.empty()) return Invalid(where, "no id=, expected id=<comm id> rank=<r>/<n> role=<role>");
  if (!rank_read || c.nranks < 1 || c.rank < 0 || c.rank >= c.nranks) {
    return Invalid(where, "no rank=<r>/<n> with 0 <= r < n, expected id=<comm id> rank=<r>/<n> role=<role>");
  }
  return c;
}

// One op event (cat "op", ph "X"); nullopt for a func the simulator does
// not know.
absl::StatusOr<std::optional<TraceOp>> ParseOp(const json& e, const std::string& where) {
  auto args = e.find("args");
  if (args == e.end() || !args->is_object()) return Invalid(where, "expected an args object with func and bytes");
  const json& a = *args;
  std::optional<NcclFunc> func = FuncFromName(a.contains("func") ? Str(a, "func") : Str(e, "name"));
  if (!func) return std::optional<TraceOp>();
  TraceOp op;
  op.where = where;
  op.func = *func == NcclFunc::kBcast ? NcclFunc::kBroadcast : *func;
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  absl::StatusOr<int64_t> tid = Int(e, "tid", 0, kIntMax, 0, where);
  absl::StatusOr<int64_t> bytes = Int(a, "bytes", 0, kMaxBytes, 0, where);
  absl::StatusOr<int64_t> chunk = Int(a, "chunk", 0, kIntMax, -1, where);
  absl::StatusOr<int64_t> chunks = Int(a, "chunks", 1, kIntMax, -1, where);
  absl::StatusOr<int64_t> start = Micros(e, "ts", where);
  absl::StatusOr<int64_t> dur = Micros(e, "dur", where);
  for (const absl::Status& s : {tid.status(), bytes.status(), chunk.status(), chunks.status(), start.status(),
                                dur.status()}) {
    if (!s.ok()) return s;
  }
  if (auto group = a.find("group"); group != a.end()) {  // a user group's id: any uint64
    if (!group->is_number_unsigned()) {
      return Invalid(where, absl::StrCat("group is ", Shown(*group), ", expected an unsigned integer"));
    }
    op.group = group->get<uint64_t>();
  }
  // The peer of a send or receive, the root of a rooted call: a comm rank,
  // checked against the comm once it is known.
  const char* peer_key = IsPointToPoint(op.func) ? "peer" : HasRoot(op.func) ? "root" : nullptr;
  if (peer_key != nullptr) {
    absl::StatusOr<int64_t> peer = Int(a, peer_key, 0, kIntMax, -1, where);
    if (!peer.ok()) return peer.status();
    if (*peer < 0 && IsPointToPoint(op.func)) return Invalid(where, "no peer, expected the peer's comm rank");
    op.peer = int(*peer);
  }
  if ((*chunk >= 0) != (*chunks >= 0) || (*chunk >= 0 && *chunk >= *chunks)) {
    return Invalid(where, absl::StrCat("chunk ", *chunk, " of ", *chunks, ", expected both, with chunk < chunks"));
  }
  op.comm_index = int(*tid / 16);
  op.bytes = uint64_t(*bytes);
  op.chunk = int(*chunk);
  op.chunks = int(*chunks);
  op.start_ns = *start;
  op.end_ns = *start + *dur;
  op.cls = ClassFromName(Str(a, "class"));
  auto tag = a.find("tag");
  if (tag != a.end() && tag->is_object()) {
    constexpr int64_t kLo = std::numeric_limits<int32_t>::min(), kHi = std::numeric_limits<int32_t>::max();
    std::pair<const char*, int32_t*> fields[] = {{"layer", &op.tag.layer}, {"stage", &op.tag.stage},
                                                 {"micro_batch", &op.tag.micro_batch}, {"phase", &op.tag.phase},
                                                 {"priority", &op.tag.priority}};
    for (auto& [key, field] : fields) {
      absl::StatusOr<int64_t> v = Int(*tag, key, kLo, kHi, TRIRACE_UNSET, where + ": tag");
      if (!v.ok()) return v.status();
      *field = int32_t(*v);
    }
    absl::StatusOr<int64_t> it = Int(*tag, "iteration", std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max(), TRIRACE_UNSET, where + ": tag");
    if (!it.ok()) return it.status();
    op.tag.iteration = *it;
  }
  return std::optional<TraceOp>(std::move(op));
}

// The document of a trace; a rank that died leaves it without its closing
// part, which is put back. Errors give the line of a syntax error.
absl::StatusOr<json> ParseDocument(std::string text, const std::string& file) {
  std::string where = file, why;
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    where = absl::StrCat(file, ":", LineOf(text, e.byte == 0 ? 0 : e.byte - 1));
    why = e.what();
  } catch (const json::exception& e) {  // a number too large for a double (out_of_range): no position
    why = e.what();
  }
  while (!text.empty() && (std::isspace(static_cast<unsigned char>(text.back())) || text.back() == ',')) text.pop_back();
  json doc = json::parse(text + "]}", nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return doc;
  // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ...": what is after the position.
  if (const size_t at = why.find("] "); absl::StartsWith(why, "[") && at != std::string::npos) why = why.substr(at + 2);
  if (const size_t at = why.find(": "); absl::StartsWith(why, "parse error") && at != std::string::npos) {
    why = why.substr(at + 2);
  }
  return Invalid(where, absl::StrCat("not a TriRace trace, not JSON (", why, "), expected the shim's trace (TRIRACE_TRACE)"));
}

absl::StatusOr<RankTrace> ReadTrace(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file = path.string();
  if (!in) return Invalid(file, "cannot read it, expected a readable trace file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  absl::StatusOr<json> doc = ParseDocument(text, file);
  if (!doc.ok()) return doc.status();
  auto events = doc->is_object() ? doc->find("traceEvents") : doc->end();
  if (!doc->is_object() || events == doc->end() || !events->is_array()) {
    return Invalid(file, "not a TriRace trace (no traceEvents array), expected a JSON object with traceEvents");
  }
  const std::vector<int> lines = EventLines(text);
  RankTrace t;
  t.path = file;
  t.file = path.filename().string();
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object()) continue;
    const std::string name = Str(e, "name"), cat = Str(e, "cat"), ph = Str(e, "ph");
    const std::string where = absl::StrCat(file, lines.size() == events->size() ? absl::StrCat(":", lines[i]) : "",
                                           ": traceEvents[", i, "]", name.empty() ? "" : " (" + name + ")");
    auto args = e.find("args");
    const bool has_args = args != e.end() && args->is_object();
    if (ph == "M" && name == "process_name") {
      int r;
      std::vector<std::string> words = absl::StrSplit(has_args ? Str(*args, "name") : "", ' ');
      if (words.size() >= 2 && words[0] == "rank" && absl::SimpleAtoi(words[1], &r)) t.rank = r;
      continue;
    }
    if (cat == "iteration" && absl::EndsWith(name, " begin") && has_args) {
      absl::StatusOr<int64_t> at = Micros(e, "ts", where);
      absl::StatusOr<int64_t> it = Int(*args, "iteration", std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max(), 0, where);
      if (!at.ok()) return at.status();
      if (!it.ok()) return it.status();
      t.iterations.push_back({*at, *it});
      continue;
    }
    if (cat != "op" || ph != "X") continue;
    absl::StatusOr<std::optional<TraceOp>> op = ParseOp(e, where);
    if (!op.ok()) return op.status();
    if (op->has_value()) t.ops.push_back(**std::move(op));
  }
  auto other = doc->find("otherData");
  if (other != doc->end() && other->is_object()) {
    for (const auto& [key, value] : other->items()) {
      int index;
      if (!absl::StartsWith(key, "comm ") || !absl::SimpleAtoi(key.substr(5), &index) || !value.is_string()) continue;
      absl::StatusOr<TraceComm> c = ParseComm(value.get<std::string>(), absl::StrCat(file, ": otherData \"", key, "\""));
      if (!c.ok()) return c.status();
      t.comms[index] = *std::move(c);
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
  for (TraceOp& op : t.ops) {
    if (op.chunk > 0 && !merged.empty() && merged.back().chunks == op.chunks && merged.back().func == op.func &&
        merged.back().comm_index == op.comm_index) {
      if (merged.back().bytes + op.bytes > uint64_t(kMaxBytes)) {
        return Invalid(op.where, absl::StrCat("the chunks of one call add up to more than ", kMaxBytes,
                                              " bytes, expected at most that"));
      }
      merged.back().bytes += op.bytes;
      merged.back().end_ns = std::max(merged.back().end_ns, op.end_ns);
      continue;
    }
    merged.push_back(std::move(op));
  }
  t.ops = std::move(merged);
  return t;
}

// interpose/comm/comm_state.h RoleName's words.
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
