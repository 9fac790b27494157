#include "sim/run/trace_out.h"

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

void TraceOut::Slice(int rank, const StreamOp& op, const NcclCall* call, TrafficClass cls, int64_t start_ns,
                     int64_t end_ns) {
  std::string& body = Begin(rank);
  if (call == nullptr) {
    absl::StrAppendFormat(&body, "{\"name\":\"compute\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,"
                                  "\"pid\":%d,\"tid\":%d}",
                          Us(start_ns), Us(end_ns - start_ns), rank, kComputeTid);
    return;
  }
  const char* func = NcclFuncName(call->func);
  absl::StrAppendFormat(&body,
                        "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"func\":\"%s\",\"bytes\":%d,\"class\":\"%s\",\"calls\":%d,\"stream\":%d,"
                        "\"completion\":\"stream\"",
                        func, Us(start_ns), Us(end_ns - start_ns), rank, CommTid(call->comm), func, call->bytes,
                        TrafficClassName(cls), op.call_count, op.stream);
  AppendTagJson(call->tag, &body);
  body.append("}}");
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

void TraceOut::Instant(int rank, const char* what, int64_t t_ns, int64_t iteration) {
  std::string& body = Begin(rank);
  absl::StrAppendFormat(&body,
                        "{\"name\":\"iteration %d %s\",\"cat\":\"iteration\",\"ph\":\"i\",\"s\":\"p\",\"ts\":%s,"
                        "\"pid\":%d,\"tid\":0,\"args\":{\"iteration\":%d}}",
                        iteration, what, Us(t_ns), rank, iteration);
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

absl::Status WriteFile(const std::string& path, const std::string& events, const Workload& w) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::NotFoundError(absl::StrCat("--trace ", path, ": cannot write the file"));
  f << "{\"traceEvents\":[\n" << events << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"trirace sim\","
    << "\"workload\":" << nlohmann::json(w.name).dump() << "}}\n";
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
    return WriteFile(path, all, w);
  }
  for (size_t r = 0; r < w.ranks.size(); ++r) {
    std::string events;
    auto it = bodies_.find(int(r));
    if (it != bodies_.end() && !it->second.empty()) events = it->second + ",\n";
    events += Metadata(w, int(r));
    std::string file = path;
    file.replace(at, 2, std::to_string(r));
    if (absl::Status s = WriteFile(file, events, w); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace trirace::sim
