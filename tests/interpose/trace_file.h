// Test helper: reads a trace file the shim wrote and checks that it has the
// structure Perfetto's JSON importer expects.
#ifndef TRIRACE_TESTS_INTERPOSE_TRACE_FILE_H_
#define TRIRACE_TESTS_INTERPOSE_TRACE_FILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace trirace::interpose::testing {

struct TraceOp {
  std::string func;
  int64_t tid = 0;
  int comm_index = 0;  // tid / kLanesPerComm
  uint64_t seq = 0;
  uint64_t group = 0;
  int result = 0;
  std::string completion;
  double ts_us = 0;   // slice start (call), microseconds
  double dur_us = 0;  // call -> completion
  nlohmann::json args;
};

struct TraceFile {
  nlohmann::json root;
  std::vector<TraceOp> ops;                   // cat "op", in file order
  std::vector<nlohmann::json> comm_events;    // cat "comm"
  std::map<int64_t, std::string> track_names; // tid -> thread_name
  std::map<std::string, std::string> other;   // otherData
};

// Parses `path`; on failure returns false and says why in `error`.
bool ReadTrace(const std::string& path, TraceFile* out, std::string* error);

// Empty when the trace is well-formed trace-event JSON: every event has
// name, ph, pid, tid; X events have numeric ts and dur >= 0; i events ts;
// every tid used by a slice is named by a thread_name metadata event.
std::string CheckPerfettoStructure(const TraceFile& trace);

// Ops of one comm (by its track index), sorted by seq.
std::vector<TraceOp> OpsOfComm(const TraceFile& trace, int comm_index);

// The comm index whose track name contains `text`, or -1.
int CommIndexNamed(const TraceFile& trace, const std::string& text);

std::string ReadWholeFile(const std::string& path);

}  // namespace trirace::interpose::testing

#endif  // TRIRACE_TESTS_INTERPOSE_TRACE_FILE_H_
