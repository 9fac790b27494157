// What TRIRACE_METRICS_FILE holds: one process's counters in the Prometheus
// text exposition format (version 0.0.4), for node_exporter's textfile
// collector (one file per process; the collector reads every *.prom file
// of its folder).
//
//   trirace_info{rank="0",mode="schedule",policy="trirace"} 1
//   trirace_ops_total{rank="0",comm="1",role="data-parallel",class="DENSE"} 120
//   trirace_bytes_total{...}                      bytes the ops moved, as NCCL counts them
//   trirace_gated_ops_total{rank="0"}             ops (chunks) that went through a gate
//   trirace_gate_holds_total{rank="0"}            of those, the ones held (the gate opened after the call)
//   trirace_gate_hold_seconds_total{rank="0"}     their time held
//   trirace_gate_releases_total{rank="0",reason="dense-gap"}  why gates opened
//   trirace_link_tx_bytes_total{rank="0",device="eth0"} / _rx_: the job's bytes on each NIC
//                                                 (the net plugin's occupancy segment)
//   trirace_link_urgent_send_bytes{...}           the job's other processes' P2P/SPARSE in flight
//   trirace_fallback{rank="0",what="schedule",reason="..."} 1   schedule mode asked for, observe run
//   trirace_fallback{rank="0",what="passthrough",reason="..."} 1  an internal failure: forwarding only
//   trirace_metrics_writes_total{rank="0"}        files written, this one included
//
// Thread safety: plain data and a pure function.
#ifndef TRIRACE_INTERPOSE_METRICS_METRICS_TEXT_H_
#define TRIRACE_INTERPOSE_METRICS_METRICS_TEXT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/traffic_class.h"
#include "scheduler/task.h"

namespace trirace::interpose {

inline constexpr int kNumReleaseReasons = static_cast<int>(sched::ReleaseReason::kRefused) + 1;

struct CommMetrics {
  int index = 0;     // the trace's comm index (1, 2, ... in creation order)
  std::string role;  // "data-parallel", "pipeline", ...
  std::array<uint64_t, kNumTrafficClasses> ops{}, bytes{};
};

struct LinkMetrics {
  std::string device;
  uint64_t tx_bytes = 0, rx_bytes = 0;
  int64_t urgent_send_bytes = -1;  // -1: the source cannot tell
};

struct MetricsSnapshot {
  std::optional<int> rank;  // the rank in the first comm, once known
  std::string mode;         // "observe", "schedule"
  std::string policy;       // schedule mode's
  std::vector<CommMetrics> comms;
  uint64_t gated_ops = 0, held_ops = 0;
  int64_t held_ns = 0;
  std::array<uint64_t, kNumReleaseReasons> releases{};
  std::vector<LinkMetrics> links;
  std::string schedule_fallback;     // why schedule mode was not run ("": it was, or not asked)
  std::string passthrough_reason;    // the internal failure ("": none)
  uint64_t writes = 0;
};

// The snapshot as one Prometheus text file: a # HELP and # TYPE line per
// metric family, label values escaped as the format requires.
std::string PrometheusText(const MetricsSnapshot& s);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_METRICS_METRICS_TEXT_H_
