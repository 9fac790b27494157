#include "sim/run/trace_out.h"

#include <cstdio>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trirace::sim {
namespace {

constexpr int kComputeTid = 1;
// Comm tracks after compute, as the shim numbers comm tracks.
int CommTid(int comm) { return 16 * (comm + 1); }

std::string Us(int64_t ns) { return absl::StrFormat("%.3f", double(ns) / 1e3); }

std::string TagJson(const trirace_tag_t& t) {
  std::string f;
  auto add = [&](const char* name, int64_t v) {
    if (v != TRIRACE_UNSET) absl::StrAppendFormat(&f, "%s\"%s\":%d", f.empty() ? "" : ",", name, v);
  };
  add("layer", t.layer);
  add("stage", t.stage);
  add("micro_batch", t.micro_batch);
  add("phase", t.phase);
  add("iteration", t.iteration);
  add("priority", t.priority);
  return f.empty() ? "" : absl::StrCat(",\"tag\":{", f, "}");
}

}  // namespace

void TraceOut::Begin() {
  if (events_++ > 0) body_.append(",\n");
}

void TraceOut::Slice(int rank, const StreamOp& op, const NcclCall* call, int64_t start_ns, int64_t end_ns) {
  Begin();
  if (call == nullptr) {
    absl::StrAppendFormat(&body_, "{\"name\":\"compute\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,"
                                  "\"pid\":%d,\"tid\":%d}",
                          Us(start_ns), Us(end_ns - start_ns), rank, kComputeTid);
    return;
  }
  const char* func = NcclFuncName(call->func);
  absl::StrAppendFormat(&body_,
                        "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"func\":\"%s\",\"bytes\":%d,\"calls\":%d,\"stream\":%d,\"completion\":\"stream\"%s}}",
                        func, Us(start_ns), Us(end_ns - start_ns), rank, CommTid(call->comm), func, call->bytes,
                        op.call_count, op.stream, TagJson(call->tag));
}

void TraceOut::Gate(int rank, const NcclCall& call, int64_t call_ns, int64_t open_ns, int64_t end_ns,
                    std::string_view release, uint32_t chunk, uint32_t chunks) {
  Begin();
  const char* func = NcclFuncName(call.func);
  absl::StrAppendFormat(&body_,
                        "{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"func\":\"%s\",\"bytes\":%d,\"gate_wait_us\":%s,\"run_us\":%s,\"release\":\"%s\","
                        "\"chunk\":%d,\"chunks\":%d,\"completion\":\"stream\"%s}}",
                        func, Us(call_ns), Us(end_ns - call_ns), rank, CommTid(call.comm) + 1, func, call.bytes,
                        Us(open_ns - call_ns), Us(end_ns - open_ns), release, chunk, chunks, TagJson(call.tag));
}

void TraceOut::Instant(int rank, const char* what, int64_t t_ns, int64_t iteration) {
  Begin();
  absl::StrAppendFormat(&body_,
                        "{\"name\":\"iteration %d %s\",\"cat\":\"iteration\",\"ph\":\"i\",\"s\":\"p\",\"ts\":%s,"
                        "\"pid\":%d,\"tid\":0,\"args\":{\"iteration\":%d}}",
                        iteration, what, Us(t_ns), rank, iteration);
}

absl::Status TraceOut::Write(const std::string& path, const Workload& w) const {
  std::string meta;
  for (size_t r = 0; r < w.ranks.size(); ++r) {
    absl::StrAppendFormat(&meta, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                                 "\"args\":{\"name\":\"rank %d (simulated)\"}}",
                          r, r);
    absl::StrAppendFormat(&meta, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                                 "\"args\":{\"name\":\"compute\"}}",
                          r, kComputeTid);
    std::set<int> comms;
    for (const NcclCall& c : w.ranks[r].calls) comms.insert(c.comm);
    for (int c : comms) {
      absl::StrAppendFormat(&meta, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                                   "\"args\":{\"name\":\"%s (%s)\"}}",
                            r, CommTid(c), w.comms[size_t(c)].name, TrafficClassName(w.comms[size_t(c)].traffic_class));
      absl::StrAppendFormat(&meta, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                                   "\"args\":{\"name\":\"%s gates\"}}",
                            r, CommTid(c) + 1, w.comms[size_t(c)].name);
    }
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::NotFoundError(absl::StrCat("--trace ", path, ": cannot write the file"));
  f << "{\"traceEvents\":[\n" << body_ << (events_ == 0 && !meta.empty() ? meta.substr(2) : meta)
    << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"trirace sim\",\"workload\":\"" << w.name
    << "\"}}\n";
  f.flush();
  if (!f) return absl::DataLossError(absl::StrCat("--trace ", path, ": writing failed"));
  return absl::OkStatus();
}

}  // namespace trirace::sim
