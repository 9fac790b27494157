#include "interpose/metrics/metrics_text.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trirace::interpose {
namespace {

// A label value: backslash, double quote and newline escaped.
std::string Escaped(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

class Writer {
 public:
  explicit Writer(const MetricsSnapshot& s) : rank_(s.rank ? std::to_string(*s.rank) : "unknown") {}

  void Family(const char* name, const char* type, const char* help) {
    absl::StrAppendFormat(&out_, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  }
  // One sample; `labels` after rank, as (name, value) pairs.
  void Sample(const char* name, std::vector<std::pair<const char*, std::string>> labels, double value) {
    absl::StrAppendFormat(&out_, "%s{rank=\"%s\"", name, Escaped(rank_));
    for (const auto& [k, v] : labels) absl::StrAppendFormat(&out_, ",%s=\"%s\"", k, Escaped(v));
    absl::StrAppendFormat(&out_, "} %.17g\n", value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string rank_;
  std::string out_;
};

}  // namespace

std::string PrometheusText(const MetricsSnapshot& s) {
  Writer w(s);
  w.Family("trirace_info", "gauge", "The TriRace shim in this process: its mode and policy (always 1).");
  w.Sample("trirace_info", {{"mode", s.mode}, {"policy", s.policy}}, 1);

  // Per comm and class with ops: the count (ops) or the bytes.
  const auto per_class = [&](const char* name, const char* help, bool bytes) {
    w.Family(name, "counter", help);
    for (const CommMetrics& c : s.comms) {
      for (int k = 0; k < kNumTrafficClasses; ++k) {
        if (c.ops[size_t(k)] == 0) continue;
        w.Sample(name, {{"comm", std::to_string(c.index)}, {"role", c.role},
                        {"class", std::string(TrafficClassName(TrafficClass(k)))}},
                 double(bytes ? c.bytes[size_t(k)] : c.ops[size_t(k)]));
      }
    }
  };
  per_class("trirace_ops_total", "NCCL calls the shim saw, per communicator and traffic class.", false);
  per_class("trirace_bytes_total", "Bytes of those calls, as NCCL counts them, per communicator and class.", true);

  w.Family("trirace_gated_ops_total", "counter", "Ops (or chunks) launched through a gate (schedule mode).");
  w.Sample("trirace_gated_ops_total", {}, double(s.gated_ops));
  w.Family("trirace_gate_holds_total", "counter", "Gated ops whose gate opened after the call: held.");
  w.Sample("trirace_gate_holds_total", {}, double(s.held_ops));
  w.Family("trirace_gate_hold_seconds_total", "counter", "Time the held ops waited at their gates.");
  w.Sample("trirace_gate_hold_seconds_total", {}, double(s.held_ns) / 1e9);
  w.Family("trirace_gate_releases_total", "counter", "Why gates opened (the policy's release reasons).");
  for (int r = 0; r < kNumReleaseReasons; ++r) {
    if (s.releases[size_t(r)] == 0) continue;
    w.Sample("trirace_gate_releases_total",
             {{"reason", std::string(sched::ReleaseReasonName(sched::ReleaseReason(r)))}}, double(s.releases[size_t(r)]));
  }

  w.Family("trirace_link_tx_bytes_total", "counter", "The job's bytes sent on each NIC (the net plugin's occupancy).");
  for (const LinkMetrics& l : s.links) w.Sample("trirace_link_tx_bytes_total", {{"device", l.device}}, double(l.tx_bytes));
  w.Family("trirace_link_rx_bytes_total", "counter", "The job's bytes received on each NIC (the net plugin's occupancy).");
  for (const LinkMetrics& l : s.links) w.Sample("trirace_link_rx_bytes_total", {{"device", l.device}}, double(l.rx_bytes));
  w.Family("trirace_link_urgent_send_bytes", "gauge",
           "Bytes the job's other processes have posted to send on each NIC as P2P or SPARSE and not yet completed.");
  for (const LinkMetrics& l : s.links) {
    if (l.urgent_send_bytes >= 0) {
      w.Sample("trirace_link_urgent_send_bytes", {{"device", l.device}}, double(l.urgent_send_bytes));
    }
  }

  w.Family("trirace_fallback", "gauge",
           "1 where the shim runs less than asked: schedule mode fell back to observe, or an internal failure left "
           "it forwarding only (passthrough).");
  if (!s.schedule_fallback.empty()) {
    w.Sample("trirace_fallback", {{"what", "schedule"}, {"reason", s.schedule_fallback}}, 1);
  }
  if (!s.passthrough_reason.empty()) {
    w.Sample("trirace_fallback", {{"what", "passthrough"}, {"reason", s.passthrough_reason}}, 1);
  }
  w.Family("trirace_metrics_writes_total", "counter", "Metrics files this process has written, this one included.");
  w.Sample("trirace_metrics_writes_total", {}, double(s.writes));
  return w.Take();
}

}  // namespace trirace::interpose
