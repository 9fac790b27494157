// Launcher: the seam between the shim's wrappers and how an Op reaches the
// real library.
//
// The wrappers never call the real collective themselves: they build an Op
// (op.h) and call Launcher::Launch(), and they route ncclGroupStart/End
// through GroupStart()/GroupEnd(). Launch() runs in the calling thread, at
// call time, in the application's order, and returns exactly the
// ncclResult_t the real call returned.
//
// Trace records: the shim prepares each op's TraceRecord (all but the
// result and the end time) and passes it to Launch(). A launcher that can
// tell when the op's work completes (the gated launcher) may take the
// record: it sets OpRecording::taken and later hands the finished record(s)
// to the RecordSink it was given (one per chunk). Otherwise the shim
// completes the record itself (completion watched on the op's stream, or the
// call's return).
//
// Implementations:
//   ObserveLauncher  calls the real function unchanged (modes off/observe).
//   GatedLauncher    schedule mode (gated_launcher.h): dedicated streams,
//                    gates, chunks; same contract, passthrough when it
//                    cannot gate.
//
// Thread safety: Launch/GroupStart/GroupEnd are called concurrently from
// every application thread; an implementation keeps per-comm state in
// CommState (reached through Op::state) and reads the thread's group
// (user_group.h) through Op::group and the Group* calls, with no
// process-wide lock on the hot path.
#ifndef TRIRACE_INTERPOSE_GATE_LAUNCHER_H_
#define TRIRACE_INTERPOSE_GATE_LAUNCHER_H_

#include <span>

#include "absl/strings/string_view.h"
#include "interpose/comm/user_group.h"
#include "interpose/op.h"
#include "interpose/real_nccl.h"
#include "interpose/trace/trace_record.h"
#include "nccl.h"

namespace trirace::interpose {

struct CommState;

// The op's record as the shim prepared it, and whether the launcher took it.
struct OpRecording {
  const TraceRecord* record = nullptr;
  bool taken = false;
};

// Where a launcher that took records delivers them. Thread-safe.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // A taken record will be finished later (counts it as in flight).
  virtual void RecordStarted() = 0;
  // `record` is complete (end_ns set). Called once per RecordStarted().
  virtual void RecordFinished(TraceRecord& record, CommState* state) = 0;
  // An event that is not an op (kTuning), complete as it is.
  virtual void RecordEvent(const TraceRecord& record) = 0;
};

class Launcher {
 public:
  virtual ~Launcher() = default;

  // Issues `op`; the result is the real library's, unchanged. `recording`
  // is never null (see the header comment).
  virtual ncclResult_t Launch(const Op& op, OpRecording* recording) = 0;
  // ncclGroupStart of the calling thread (the shim enters the thread's
  // UserGroup once it succeeded).
  virtual ncclResult_t GroupStart() = 0;
  // ncclGroupEnd of the calling thread; the shim has left one level of
  // `group` before the call. group.depth() == 0 with ops in it: this end
  // closes the group, and the launcher ends the records it took in it (or
  // hands them on to be ended at their completion). The shim finishes the
  // other records afterwards and resets the group.
  virtual ncclResult_t GroupEnd(UserGroup& group) = 0;
  // ncclGroupSimulateEnd: ends the level like GroupEnd without running the
  // group; taken records end at once.
  virtual ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info, UserGroup& group) = 0;

  // True when this launcher controls when ops run (schedule mode).
  virtual bool gated() const = 0;
  virtual absl::string_view name() const = 0;

  // Blocking comms that just became usable (created outside a group, or by
  // the group that just ended), before the application issues anything on
  // them; several when one call or group made several. The gated launcher
  // runs the peer exchange here (peer_exchange.h).
  virtual void CommsReady(std::span<CommState* const> /*states*/) {}

  // `state`'s comm was destroyed or aborted (the real call succeeded). What
  // the launcher keeps for the comm goes once its work has drained; the
  // call itself never waits for that (an abort must not block).
  virtual void CommRemoved(CommState* /*state*/) {}

  // trirace_iteration_begin() (feeds the scheduler's deadline rule).
  virtual void BeginIteration(int64_t /*iteration*/) {}
  // At process exit: opens every gate still closed and stops threads.
  virtual void Shutdown() {}
};

// Forwards every call to the real library as it came.
class ObserveLauncher final : public Launcher {
 public:
  explicit ObserveLauncher(const RealNccl& real) : real_(real) {}

  ncclResult_t Launch(const Op& op, OpRecording*) override { return CallReal(real_, op); }
  ncclResult_t GroupStart() override {
    return real_.GroupStart != nullptr ? real_.GroupStart() : ncclInvalidUsage;
  }
  ncclResult_t GroupEnd(UserGroup&) override {
    return real_.GroupEnd != nullptr ? real_.GroupEnd() : ncclInvalidUsage;
  }
  ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info, UserGroup&) override {
    return real_.GroupSimulateEnd != nullptr ? real_.GroupSimulateEnd(info) : ncclInvalidUsage;
  }
  bool gated() const override { return false; }
  absl::string_view name() const override { return "observe"; }

 private:
  const RealNccl& real_;
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_LAUNCHER_H_
