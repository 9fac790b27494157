// The objects behind the handles NetCore gives NCCL: contexts, comms and
// their request slots. Internal to plugin/core (the net_core*.cc files).
//
// Thread safety: as NetCore says; the fields' own comments say which lock
// or atomic guards them.
#ifndef TRIRACE_PLUGIN_CORE_CORE_OBJECTS_H_
#define TRIRACE_PLUGIN_CORE_CORE_OBJECTS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "plugin/core/net_core.h"
#include "plugin/core/traffic_class.h"

namespace trirace::net {

// The argument errors of every call: "<call>: <what>".
inline absl::Status InvalidCall(const char* call, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(call, ": ", what));
}

struct NetCore::Context {
  uint64_t comm_id = 0;
  CommConfig config;
  void* inner = nullptr;
  std::atomic<TrafficClass> cls{TrafficClass::kOther};
  std::atomic<int> refs{1};  // the ctx itself plus one per comm
  bool finalized = false;    // guarded by NetCore::mu_
};

struct NetCore::Request {
  std::atomic<bool> busy{false};
  uint16_t seq = 0;
  void* inner = nullptr;
  bool flush = false;
  int n = 0;
  TrafficClass cls = TrafficClass::kOther;
  uint64_t posted = 0;
};

struct NetCore::Comm {
  Kind kind = Kind::kListen;
  int dev = 0;
  int max_recvs = 1;
  Context* ctx = nullptr;
  void* inner = nullptr;
  uint64_t handle = 0;
  bool explicit_traffic_class = false;  // send: connect's trafficClass; recv: the context's
  std::optional<ClassMarks> class_marks;  // last marks class priority set
  std::array<Request, NCCL_NET_MAX_REQUESTS> reqs;
};

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_CORE_OBJECTS_H_
