// Reading one rank's trace file (replay_trace.h): the shim's events, the
// simulator's stream times, otherData's comms; values checked and errors
// named by file and line.
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
#include "sim/workloads/replay_trace.h"

namespace trirace::sim::replay_internal {
namespace {

using json = nlohmann::json;

// What a trace may hold. Times are microseconds since the epoch (the shim
// writes about 1.8e15 today); below 4e15 us every time, sum and gap in
// nanoseconds fits an int64_t. Bytes up to 2^48 per call (256 TiB).
constexpr double kMaxMicros = 4e15;
constexpr int64_t kMaxBytes = int64_t{1} << 48;

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
  return int64_t(std::llround(us * 1e3));
}

// The stream-timing args of an op, compute slice or stamp ("stream",
// "step", "queued_us"; replay_trace.h), unknown where absent.
absl::StatusOr<StreamTiming> TimingOf(const json& args, const std::string& where) {
  StreamTiming t;
  absl::StatusOr<int64_t> stream = Int(args, "stream", 0, std::numeric_limits<int>::max(), -1, where);
  absl::StatusOr<int64_t> step = Int(args, "step", 0, std::numeric_limits<int64_t>::max(), -1, where);
  if (!stream.ok()) return stream.status();
  if (!step.ok()) return step.status();
  t.stream = int(*stream);
  t.seq = *step;
  if (args.contains("queued_us")) {
    absl::StatusOr<int64_t> queued = Micros(args, "queued_us", where);
    if (!queued.ok()) return queued.status();
    t.queued_ns = *queued;
  }
  return t;
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
  absl::StatusOr<StreamTiming> timing = TimingOf(a, where);
  if (!timing.ok()) return timing.status();
  op.timing = *timing;
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

}  // namespace

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
      absl::StatusOr<int64_t> step = Int(*args, "step", 0, std::numeric_limits<int64_t>::max(), -1, where);
      for (const absl::Status& s : {at.status(), it.status(), step.status()}) {
        if (!s.ok()) return s;
      }
      t.iterations.push_back({*at, *it, *step});
      continue;
    }
    // The simulator's compute slices and stream stamps (replay_trace.h).
    const bool stamp = cat == "iteration" && absl::StartsWith(name, "stamp ") && has_args;
    if ((stamp || (cat == "compute" && ph == "X")) && has_args) {
      TraceSpan span;
      absl::StatusOr<int64_t> at = Micros(e, "ts", where);
      absl::StatusOr<int64_t> dur = Micros(e, "dur", where);
      absl::StatusOr<int64_t> index = Int(*args, "stamp", 0, std::numeric_limits<int>::max(), -1, where);
      absl::StatusOr<StreamTiming> timing = TimingOf(*args, where);
      for (const absl::Status& s : {at.status(), dur.status(), index.status(), timing.status()}) {
        if (!s.ok()) return s;
      }
      span.start_ns = *at;
      span.end_ns = *at + (stamp ? 0 : *dur);
      span.stamp = int(*index);
      span.timing = *timing;
      if (stamp && span.stamp < 0) return Invalid(where, "a stamp without args.stamp, expected the iteration boundary's index");
      (stamp ? t.stamps : t.computes).push_back(span);
      continue;
    }
    if (cat != "op" || ph != "X") continue;
    absl::StatusOr<std::optional<TraceOp>> op = ParseOp(e, where);
    if (!op.ok()) return op.status();
    if (op->has_value()) t.ops.push_back(**std::move(op));
  }
  auto other = doc->find("otherData");
  if (other != doc->end() && other->is_object()) {
    t.producer = Str(*other, "producer");
    t.job = Str(*other, "job");
    if (const std::string warmup = Str(*other, "warmup"); !warmup.empty() &&
        (!absl::SimpleAtoi(warmup, &t.warmup) || t.warmup < 0)) {
      return Invalid(absl::StrCat(file, ": otherData \"warmup\""),
                     absl::StrCat("\"", warmup, "\", expected a count of iterations (0 or more)"));
    }
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

}  // namespace trirace::sim::replay_internal
