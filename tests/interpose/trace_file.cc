#include "trace_file.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "interpose/trace/trace_json.h"

namespace trirace::interpose::testing {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ReadTrace(const std::string& path, TraceFile* out, std::string* error) {
  const std::string text = ReadWholeFile(path);
  if (text.empty()) {
    *error = "trace file " + path + " is missing or empty";
    return false;
  }
  try {
    out->root = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    *error = std::string("trace is not JSON: ") + e.what();
    return false;
  }
  if (!out->root.is_object() || !out->root.contains("traceEvents") || !out->root["traceEvents"].is_array()) {
    *error = "no traceEvents array";
    return false;
  }
  for (const auto& e : out->root["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    const std::string ph = e.value("ph", "");
    if (ph == "M" && e.value("name", "") == "thread_name") {
      out->track_names[e["tid"].get<int64_t>()] = e["args"]["name"].get<std::string>();
    }
    if (cat == "comm") out->comm_events.push_back(e);
    if (cat != "op") continue;
    TraceOp op;
    op.func = e["name"].get<std::string>();
    op.tid = e["tid"].get<int64_t>();
    op.comm_index = static_cast<int>(op.tid / kLanesPerComm);
    op.args = e["args"];
    op.seq = op.args["seq"].get<uint64_t>();
    op.group = op.args["group"].get<uint64_t>();
    op.result = op.args["result"].get<int>();
    op.completion = op.args["completion"].get<std::string>();
    op.ts_us = e["ts"].get<double>();
    op.dur_us = e["dur"].get<double>();
    out->ops.push_back(std::move(op));
  }
  if (out->root.contains("otherData")) {
    for (auto& [k, v] : out->root["otherData"].items()) out->other[k] = v.get<std::string>();
  }
  return true;
}

std::string CheckPerfettoStructure(const TraceFile& trace) {
  std::set<int64_t> used;
  if (trace.root.value("displayTimeUnit", "") != "ns") return "displayTimeUnit is not \"ns\"";
  for (const auto& e : trace.root["traceEvents"]) {
    for (const char* key : {"name", "ph", "pid", "tid"}) {
      if (!e.contains(key)) return std::string("an event lacks \"") + key + "\": " + e.dump();
    }
    const std::string ph = e["ph"].get<std::string>();
    if (ph == "X") {
      if (!e["ts"].is_number() || !e["dur"].is_number()) return "X event without numeric ts/dur: " + e.dump();
      if (e["dur"].get<double>() < 0) return "negative dur: " + e.dump();
      used.insert(e["tid"].get<int64_t>());
    } else if (ph == "i") {
      if (!e["ts"].is_number()) return "instant without ts: " + e.dump();
    } else if (ph != "M") {
      return "unexpected phase " + ph;
    }
  }
  for (int64_t tid : used) {
    if (trace.track_names.count(tid) == 0) return "track " + std::to_string(tid) + " has no thread_name";
  }
  return "";
}

std::vector<TraceOp> OpsOfComm(const TraceFile& trace, int comm_index) {
  std::vector<TraceOp> out;
  for (const auto& op : trace.ops) {
    if (op.comm_index == comm_index) out.push_back(op);
  }
  std::stable_sort(out.begin(), out.end(), [](const TraceOp& a, const TraceOp& b) { return a.seq < b.seq; });
  return out;
}

int CommIndexNamed(const TraceFile& trace, const std::string& text) {
  for (const auto& [tid, name] : trace.track_names) {
    if (name.find(text) != std::string::npos) return static_cast<int>(tid / kLanesPerComm);
  }
  return -1;
}

}  // namespace trirace::interpose::testing
