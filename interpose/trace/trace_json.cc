#include "interpose/trace/trace_json.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/tag_json.h"
#include "nlohmann/json.hpp"
#include "scheduler/task.h"

namespace trirace::interpose {
namespace {

void AppendDurationUs(int64_t ns, std::string* out) {
  if (ns < 0) ns = 0;
  absl::StrAppendFormat(out, "%d.%03d", ns / 1000, ns % 1000);
}

std::string TrackName(const CommState& s, int lane) {
  bool annotated = false;
  const int role = EffectiveRole(s, &annotated);
  std::string name = absl::StrFormat("comm %d %s (%s) rank %d/%d", s.index, RoleName(role),
                                     annotated ? "annotated" : "inferred", s.rank, s.nranks);
  if (lane > 0) absl::StrAppend(&name, " +", lane);
  return name;
}

}  // namespace

std::string JsonQuote(absl::string_view text) {
  // nlohmann-json's string escaping; bytes that are not UTF-8 (a host or
  // path name can hold any) become U+FFFD instead of throwing.
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TraceJson::TraceJson(int pid, int64_t wall_minus_mono_ns) : pid_(pid), wall_minus_mono_ns_(wall_minus_mono_ns) {}

std::string TraceJson::Header() { return "{\"traceEvents\":[\n"; }

void TraceJson::Separator(std::string* out) {
  if (!first_) out->append(",\n");
  first_ = false;
}

void TraceJson::AppendTimestamp(int64_t mono_ns, std::string* out) const {
  const int64_t ns = mono_ns + wall_minus_mono_ns_;
  absl::StrAppendFormat(out, "%d.%03d", ns / 1000, ns % 1000);
}

int TraceJson::Lane(int comm_index, int64_t start_ns, int64_t end_ns) {
  auto [it, inserted] = lane_end_.try_emplace(comm_index);
  if (inserted) it->second.fill(INT64_MIN);
  auto& ends = it->second;
  int lane = kLanesPerComm - 1;
  for (int i = 0; i < kLanesPerComm; ++i) {
    if (ends[i] <= start_ns) {
      lane = i;
      break;
    }
  }
  ends[lane] = std::max(ends[lane], end_ns);
  int& used = lanes_used_[comm_index];
  used = std::max(used, lane + 1);
  return lane;
}

void TraceJson::AppendRecord(const TraceRecord& r, std::string* out) {
  Separator(out);
  switch (r.kind) {
    case RecordKind::kIterationBegin:
    case RecordKind::kIterationEnd: {
      absl::StrAppendFormat(out, "{\"name\":\"iteration %d %s\",\"cat\":\"iteration\",\"ph\":\"i\",\"s\":\"p\",\"ts\":",
                            r.iteration, r.kind == RecordKind::kIterationBegin ? "begin" : "end");
      AppendTimestamp(r.start_ns, out);
      absl::StrAppendFormat(out, ",\"pid\":%d,\"tid\":0,\"args\":{\"iteration\":%d}}", pid_, r.iteration);
      return;
    }
    case RecordKind::kTuning: {
      // A counter track per link (its two factors over time) and an instant
      // saying why and on what evidence.
      const TraceRecord::Tuning& t = r.tuning;
      absl::StrAppendFormat(out, "{\"name\":\"tuning link %d\",\"cat\":\"tuning\",\"ph\":\"C\",\"ts\":", t.link);
      AppendTimestamp(r.start_ns, out);
      absl::StrAppendFormat(out, ",\"pid\":%d,\"tid\":0,\"args\":{\"window_scale\":%.3f,\"credit_scale\":%.3f}}",
                            pid_, t.window_scale, t.credit_scale);
      Separator(out);
      absl::StrAppendFormat(out, "{\"name\":\"tuning link %d: %s\",\"cat\":\"tuning\",\"ph\":\"i\",\"s\":\"p\",\"ts\":",
                            t.link, t.why);
      AppendTimestamp(r.start_ns, out);
      absl::StrAppendFormat(out,
                            ",\"pid\":%d,\"tid\":0,\"args\":{\"link\":%d,\"why\":\"%s\",\"window_scale\":%.3f,"
                            "\"credit_scale\":%.3f,\"p2p_slowdown\":%.3f,\"samples\":%d,\"utilisation\":%.3f,"
                            "\"held_gap\":%.3f,\"held_beside\":%.3f}}",
                            pid_, t.link, t.why, t.window_scale, t.credit_scale, t.p2p_slowdown, t.samples,
                            t.utilisation, t.held_gap, t.held_beside);
      return;
    }
    case RecordKind::kCommEvent: {
      const int tid = r.comm_index * kLanesPerComm + Lane(r.comm_index, r.start_ns, r.end_ns);
      absl::StrAppendFormat(out, "{\"name\":\"%s\",\"cat\":\"comm\",\"ph\":\"X\",\"ts\":", CommCallName(r.comm_call));
      AppendTimestamp(r.start_ns, out);
      out->append(",\"dur\":");
      AppendDurationUs(r.end_ns - r.start_ns, out);
      absl::StrAppendFormat(out, ",\"pid\":%d,\"tid\":%d,\"args\":{\"result\":%d,\"thread\":%d}}", pid_, tid, r.result,
                            r.thread_id);
      return;
    }
    case RecordKind::kOp:
      break;
  }
  const int tid = r.comm_index * kLanesPerComm + Lane(r.comm_index, r.start_ns, r.end_ns);
  const absl::string_view func = NcclFuncName(r.func);
  absl::StrAppendFormat(out, "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":", func);
  AppendTimestamp(r.start_ns, out);
  out->append(",\"dur\":");
  AppendDurationUs(r.end_ns - r.start_ns, out);
  absl::StrAppendFormat(out,
                        ",\"pid\":%d,\"tid\":%d,\"args\":{\"func\":\"%s\",\"seq\":%d,\"bytes\":%d,\"count\":%d,"
                        "\"dtype\":\"%s\"",
                        pid_, tid, func, r.seq, r.bytes, r.count,
                        DataTypeName(static_cast<ncclDataType_t>(r.datatype)));
  if (r.func == NcclFunc::kReduce || r.func == NcclFunc::kAllReduce || r.func == NcclFunc::kReduceScatter) {
    absl::StrAppendFormat(out, ",\"redop\":\"%s\"", RedOpName(static_cast<ncclRedOp_t>(r.redop)));
  }
  if (HasRoot(r.func)) absl::StrAppendFormat(out, ",\"root\":%d", r.peer_or_root);
  if (IsPointToPoint(r.func)) absl::StrAppendFormat(out, ",\"peer\":%d", r.peer_or_root);
  absl::StrAppendFormat(out, ",\"group\":%d,\"class\":\"%s\",\"result\":%d,\"thread\":%d,\"completion\":\"%s\"",
                        r.group_id, TrafficClassName(static_cast<TrafficClass>(r.op_class)), r.result, r.thread_id,
                        r.completion == CompletionSource::kStream ? "stream" : "return");
  AppendTagJson(r.tag, out);
  if (r.gate_wait_ns >= 0) {
    out->append(",\"gate_wait_us\":");
    AppendDurationUs(r.gate_wait_ns, out);
  }
  if (r.run_ns >= 0) {
    out->append(",\"run_us\":");
    AppendDurationUs(r.run_ns, out);
  }
  if (r.release_reason >= 0) {
    // The number for tools that have it; the name for those that should not
    // copy the enum (bench/e2e/release_reasons.py).
    absl::StrAppendFormat(out, ",\"release_reason\":%d,\"release\":\"%s\"", r.release_reason,
                          sched::ReleaseReasonName(static_cast<sched::ReleaseReason>(r.release_reason)));
  }
  if (r.chunk_index >= 0) absl::StrAppendFormat(out, ",\"chunk\":%d,\"chunks\":%d", r.chunk_index, r.chunk_count);
  out->append("}}");
}

void TraceJson::AppendFooter(const std::vector<const CommState*>& comms, const std::string& process_name,
                             const std::vector<std::pair<std::string, std::string>>& other, std::string* out) {
  Separator(out);
  absl::StrAppendFormat(out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":%s}}",
                        pid_, JsonQuote(process_name));
  auto name_track = [&](int tid, const std::string& name) {
    Separator(out);
    absl::StrAppendFormat(out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":%s}}",
                          pid_, tid, JsonQuote(name));
    Separator(out);
    absl::StrAppendFormat(out,
                          "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                          "\"args\":{\"sort_index\":%d}}",
                          pid_, tid, tid);
  };
  if (lanes_used_.count(0) != 0) {
    for (int lane = 0; lane < lanes_used_[0]; ++lane) {
      name_track(lane, lane == 0 ? std::string("untracked comms") : absl::StrCat("untracked comms +", lane));
    }
  }
  for (const CommState* s : comms) {
    auto it = lanes_used_.find(s->index);
    const int lanes = it == lanes_used_.end() ? 1 : it->second;
    for (int lane = 0; lane < lanes; ++lane) name_track(s->index * kLanesPerComm + lane, TrackName(*s, lane));
  }
  out->append("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{");
  bool first = true;
  for (const auto& [k, v] : other) {
    absl::StrAppend(out, first ? "" : ",", JsonQuote(k), ":", JsonQuote(v));
    first = false;
  }
  out->append("}}\n");
}

}  // namespace trirace::interpose
