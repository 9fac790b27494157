// Chrome / Perfetto trace-event JSON for the shim's records.
//
// File layout (JSON object format, loadable by ui.perfetto.dev and
// chrome://tracing):
//   {"traceEvents":[
//     {"name":"AllReduce","cat":"op","ph":"X","ts":..,"dur":..,"pid":..,"tid":..,"args":{..}},
//     ... one event per record, then the metadata events naming the tracks ...
//   ],"displayTimeUnit":"ns","otherData":{"dropped_events":"0", ...}}
//
// Tracks: one per communicator (tid = comm index x kLanesPerComm + lane):
// op slices of one comm that overlap in time (an op called before the
// previous one completed) go to the next lane, shown as "+1", "+2" below
// the comm's first track. Track names carry the comm's role and whether it
// was annotated or inferred. Iteration marks are process-wide instants.
// Timestamps are microseconds since the Unix epoch, so traces of several
// ranks can be merged.
//
// Thread safety: TraceJson is used by the trace writer thread only.
#ifndef TRIRACE_INTERPOSE_TRACE_TRACE_JSON_H_
#define TRIRACE_INTERPOSE_TRACE_TRACE_JSON_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "interpose/comm/comm_state.h"
#include "interpose/trace/trace_record.h"

namespace trirace::interpose {

inline constexpr int kLanesPerComm = 16;

class TraceJson {
 public:
  // `wall_minus_mono_ns`: add to a MonotonicNs() value to get Unix time.
  TraceJson(int pid, int64_t wall_minus_mono_ns);

  static std::string Header();
  // Appends one event (with a leading comma after the first).
  void AppendRecord(const TraceRecord& record, std::string* out);
  // Appends the track-naming metadata for `comms`, then closes the event
  // array and writes otherData from `other` (key, value) pairs.
  void AppendFooter(const std::vector<const CommState*>& comms, const std::string& process_name,
                    const std::vector<std::pair<std::string, std::string>>& other, std::string* out);

  // Used lanes per comm index (tests and track naming).
  const std::map<int, int>& lanes_used() const { return lanes_used_; }

 private:
  int Lane(int comm_index, int64_t start_ns, int64_t end_ns);
  void AppendTimestamp(int64_t mono_ns, std::string* out) const;
  void Separator(std::string* out);

  int pid_;
  int64_t wall_minus_mono_ns_;
  bool first_ = true;
  std::map<int, std::array<int64_t, kLanesPerComm>> lane_end_;
  std::map<int, int> lanes_used_;  // comm index -> lanes used
};

// A JSON string literal (quotes and escapes included).
std::string JsonQuote(absl::string_view text);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_TRACE_TRACE_JSON_H_
