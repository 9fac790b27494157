#include "sim/run/trace_out.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/tag_json.h"
#include "nlohmann/json.hpp"

namespace trirace::sim {
namespace {

constexpr int kComputeTid = 1;
// Comm tracks after compute, as the shim numbers comm tracks.
int CommTid(int comm) { return 16 * (comm + 1); }

std::string Us(int64_t ns) { return absl::StrFormat("%.3f", double(ns) / 1e3); }
}  // namespace

std::string& TraceOut::Begin(int rank) {
  ++events_;
  std::string& body = bodies_[rank];
  if (!body.empty()) body.append(",\n");
  return body;
}

void TraceOut::Called(int rank, int op, int64_t t_ns, int64_t step) {
  std::vector<std::pair<int64_t, int64_t>>& called = called_[rank];
  if (op >= int(called.size())) called.resize(size_t(op) + 1, {-1, -1});
  called[size_t(op)] = {t_ns, step};
}

std::string TraceOut::Issued(int rank, int op_index, int stream, int64_t start_ns) const {
  std::string out = absl::StrFormat(",\"stream\":%d", stream);
  auto it = called_.find(rank);
  if (it == called_.end() || op_index >= int(it->second.size()) || it->second[size_t(op_index)].second < 0) return out;
  const auto [call_ns, step] = it->second[size_t(op_index)];
  absl::StrAppendFormat(&out, ",\"step\":%d,\"queued_us\":%s", step, Us(start_ns - call_ns));
  return out;
}

void TraceOut::Slice(int rank, int op_index, const StreamOp& op, const NcclCall* calls,
                     absl::FunctionRef<TrafficClass(const NcclCall&)> class_of, int64_t start_ns, int64_t end_ns) {
  const std::string issued = Issued(rank, op_index, op.stream, start_ns);
  if (calls == nullptr) {
    absl::StrAppendFormat(&Begin(rank), "{\"name\":\"compute\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,"
                                        "\"pid\":%d,\"tid\":%d,\"args\":{%s}}",
                          Us(start_ns), Us(end_ns - start_ns), rank, kComputeTid, issued.substr(1));
    return;
  }
  for (int k = 0; k < op.call_count; ++k) {
    const NcclCall& call = calls[k];
    std::string& body = Begin(rank);
    const char* func = NcclFuncName(call.func);
    absl::StrAppendFormat(&body,
                          "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":%d,"
                          "\"args\":{\"func\":\"%s\",\"bytes\":%d,\"class\":\"%s\",\"calls\":%d%s,"
                          "\"completion\":\"stream\"",
                          func, Us(start_ns), Us(end_ns - start_ns), rank, CommTid(call.comm), func, call.bytes,
                          TrafficClassName(class_of(call)), op.call_count, issued);
    if (call.peer >= 0) absl::StrAppendFormat(&body, ",\"%s\":%d", IsPointToPoint(call.func) ? "peer" : "root", call.peer);
    // One group per multi-call op: the op's index, from 1.
    if (op.call_count > 1) absl::StrAppendFormat(&body, ",\"group\":%d", op_index + 1);
    AppendTagJson(call.tag, &body);
    body.append("}}");
  }
}

void TraceOut::Gate(int rank, const NcclCall& call, TrafficClass cls, int64_t call_ns, int64_t open_ns,
                    int64_t end_ns, std::string_view release, uint32_t chunk, uint32_t chunks) {
  std::string& body = Begin(rank);
  const char* func = NcclFuncName(call.func);
  absl::StrAppendFormat(&body,
                        "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"func\":\"%s\",\"bytes\":%d,\"class\":\"%s\",\"gate_wait_us\":%s,\"run_us\":%s,"
                        "\"release\":\"%s\",\"chunk\":%d,\"chunks\":%d,\"completion\":\"stream\"",
                        func, Us(call_ns), Us(end_ns - call_ns), rank, CommTid(call.comm) + 1, func, call.bytes,
                        TrafficClassName(cls), Us(open_ns - call_ns), Us(end_ns - open_ns), release, chunk, chunks);
  AppendTagJson(call.tag, &body);
  body.append("}}");
}

void TraceOut::Instant(int rank, const char* what, int64_t t_ns, int64_t iteration, int64_t step) {
  std::string& body = Begin(rank);
  absl::StrAppendFormat(&body,
                        "{\"name\":\"iteration %d %s\",\"cat\":\"iteration\",\"ph\":\"i\",\"s\":\"p\",\"ts\":%s,"
                        "\"pid\":%d,\"tid\":0,\"args\":{\"iteration\":%d,\"step\":%d}}",
                        iteration, what, Us(t_ns), rank, iteration, step);
}

void TraceOut::Stamp(int rank, int op_index, const StreamOp& op, int64_t t_ns) {
  const std::string issued = Issued(rank, op_index, op.stream, t_ns);
  absl::StrAppendFormat(&Begin(rank),
                        "{\"name\":\"stamp %d\",\"cat\":\"iteration\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%s,"
                        "\"pid\":%d,\"tid\":%d,\"args\":{\"stamp\":%d%s}}",
                        op.stamp, Us(t_ns), rank, kComputeTid, op.stamp, issued);
}

namespace {

// The metadata naming rank r's process and tracks.
std::string Metadata(const Workload& w, int r) {
  std::string meta;
  absl::StrAppendFormat(&meta, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                               "\"args\":{\"name\":\"rank %d (simulated)\"}}",
                        r, r);
  absl::StrAppendFormat(&meta, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                               "\"args\":{\"name\":\"compute\"}}",
                        r, kComputeTid);
  std::set<int> comms;
  for (const NcclCall& c : w.ranks[size_t(r)].calls) comms.insert(c.comm);
  for (int c : comms) {
    absl::StrAppendFormat(&meta, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                                 "\"args\":{\"name\":\"%s (%s)\"}}",
                          r, CommTid(c), w.comms[size_t(c)].name, TrafficClassName(w.comms[size_t(c)].traffic_class));
    absl::StrAppendFormat(&meta, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                                 "\"args\":{\"name\":\"%s gates\"}}",
                          r, CommTid(c) + 1, w.comms[size_t(c)].name);
  }
  return meta;
}

// The shim's comm role words (interpose/comm/comm_state.h RoleName).
const char* RoleOf(const CommSpec& c) {
  if (c.pipeline || c.traffic_class == TrafficClass::kP2P) return "pipeline";
  if (c.traffic_class == TrafficClass::kDense) return "data-parallel";
  if (c.traffic_class == TrafficClass::kSparse) return "expert";
  return "unknown";
}

// otherData: the run, and for one rank's file (rank >= 0) its comms and job.
std::string OtherData(const Workload& w, int rank) {
  nlohmann::json other = {{"producer", "trirace sim"}, {"workload", w.name}, {"warmup", std::to_string(w.warmup)}};
  if (rank >= 0) {
    for (size_t c = 0; c < w.comms.size(); ++c) {
      const std::vector<int>& ranks = w.comms[c].ranks;
      const auto at = std::find(ranks.begin(), ranks.end(), rank);
      if (at == ranks.end()) continue;
      other[absl::StrCat("comm ", CommTid(int(c)) / 16)] =
          absl::StrFormat("id=%x rank=%d/%d role=%s", c, at - ranks.begin(), ranks.size(), RoleOf(w.comms[c]));
    }
    if (!w.job_of_rank.empty() && size_t(rank) < w.job_of_rank.size() && w.job_of_rank[size_t(rank)] >= 0 &&
        size_t(w.job_of_rank[size_t(rank)]) < w.job_names.size()) {
      other["job"] = w.job_names[size_t(w.job_of_rank[size_t(rank)])];
    }
  }
  return other.dump();
}

absl::Status WriteFile(const std::string& path, const std::string& events, const Workload& w, int rank) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::NotFoundError(absl::StrCat("--trace ", path, ": cannot write the file"));
  f << "{\"traceEvents\":[\n" << events << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" << OtherData(w, rank)
    << "}\n";
  f.flush();
  if (!f) return absl::DataLossError(absl::StrCat("--trace ", path, ": writing failed"));
  return absl::OkStatus();
}

}  // namespace

absl::Status TraceOut::Write(const std::string& path, const Workload& w) const {
  const size_t at = path.find("%r");
  if (at == std::string::npos) {
    std::string all;
    for (size_t r = 0; r < w.ranks.size(); ++r) {
      auto it = bodies_.find(int(r));
      if (it != bodies_.end() && !it->second.empty()) absl::StrAppend(&all, all.empty() ? "" : ",\n", it->second);
      absl::StrAppend(&all, all.empty() ? "" : ",\n", Metadata(w, int(r)));
    }
    return WriteFile(path, all, w, -1);
  }
  for (size_t r = 0; r < w.ranks.size(); ++r) {
    std::string events;
    auto it = bodies_.find(int(r));
    if (it != bodies_.end() && !it->second.empty()) events = it->second + ",\n";
    events += Metadata(w, int(r));
    std::string file = path;
    file.replace(at, 2, std::to_string(r));
    if (absl::Status s = WriteFile(file, events, w, int(r)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace trirace::sim
