// Shim: the process-wide runtime of libtrirace.so.
//
// Created on the first intercepted call (or the first annotation call): it
// resolves the real NCCL (real_nccl.h), reads TRIRACE_MODE / TRIRACE_TRACE /
// TRIRACE_TRACE_BUFFER_MB, logs the real version at INFO, starts the trace
// writer and registers the exit hook (summary, trace footer). It never
// goes away.
//
// The wrappers (wrappers_*.cc) use it as follows:
//   Shim& shim = Shim::Get();
//   if (!shim.ShouldRecord()) return <forward to shim.real()->X(...)>;
//   Op op = ...;                 // the call's arguments
//   return shim.IssueOp(op);     // registry, tag, launcher, stats, trace
// ShouldRecord() is false in mode off, after an internal failure (pure
// forwarding from then on), when no real NCCL was found, and on re-entry:
// a call the real library makes to its own public symbols while the shim is
// already inside an intercepted call on that thread (ncclBcast ->
// ncclBroadcast, ncclCommGetAsyncError, ...) is forwarded, not counted again.
//
// What it owns, once for the process:
//   - the device backend (device::SelectDevice: hostccl's host streams or
//     CUDA), opened when the mode is not off; the gated launcher borrows it;
//   - the calling thread's user group (user_group.h): the shim enters and
//     leaves its levels, hands it to the launcher in Op::group and at each
//     Group* end, and finishes the grouped records the launcher did not
//     take; launchers keep no group state of their own;
//   - the completion of every op record the launcher does not take
//     (OpRecording): the op's stream is watched after it (at the outermost
//     ncclGroupEnd for grouped ops; StreamWatcher: an event on the stream,
//     a host function on a stream of the shim's) and the record ends at
//     the op's real completion, on hostccl and on CUDA alike, without the
//     op's stream waiting for a host thread. The record ends at the call's
//     return instead when there is no device backend, the call failed, the
//     stream is being captured into a CUDA graph (a captured event record
//     would be a node of the graph), or the watch cannot be queued. Records
//     the gated launcher takes end at its tickets' completion callbacks
//     (gated_launcher.h).
//
// Thread safety: every method may be called from any thread. The op path
// takes no lock: the registry lookup is lock-free, the tag and group state
// are thread-local, statistics are relaxed atomics and the trace buffer is
// a lock-free queue. Creation is serialised by a process-wide mutex; two
// small mutexes guard the comms finalized but not yet destroyed and the set
// of missing functions already warned about (both off the op path).
#ifndef TRIRACE_INTERPOSE_SHIM_H_
#define TRIRACE_INTERPOSE_SHIM_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/params.h"
#include "interpose/comm/comm_ledger.h"
#include "interpose/comm/comm_registry.h"
#include "interpose/comm/user_group.h"
#include "interpose/device/device.h"
#include "interpose/gate/launcher.h"
#include "interpose/metrics/gate_counters.h"
#include "interpose/metrics/metrics_file.h"
#include "interpose/op.h"
#include "interpose/real_nccl.h"
#include "interpose/start_verdict.h"
#include "interpose/stream_watcher.h"
#include "interpose/trace/trace_record.h"
#include "interpose/trace/trace_writer.h"
#include "nccl.h"

namespace trirace::interpose {

// What a comm-creating call produced, for OnCommCreated().
struct NewComm {
  CommCall call = CommCall::kInitRank;
  ncclComm_t comm = nullptr;
  uint64_t id = 0;
  uint64_t parent_id = 0;
  int rank = -1;
  int nranks = -1;
  int device = -1;
  bool nonblocking = false;  // ncclConfig_t.blocking = 0 (or inherited by a split)
  int traffic_class = -1;    // the trafficClass the shim set in its config; -1: none
};

// Thread-local re-entry depth: > 0 while the calling thread is inside an
// intercepted call.
class ReentryGuard {
 public:
  ReentryGuard() { ++depth_; }
  ~ReentryGuard() { --depth_; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;
  static bool active() { return depth_ > 0; }

 private:
  static thread_local int depth_;
};

class Shim final : private RecordSink {
 public:
  // The runtime, initialised on first use. Thread-safe; a call made on the
  // initialising thread while it initialises sees a forwarding-only shim.
  static Shim& Get();

  // The real library, or nullptr when none was found.
  const RealNccl* real() const { return real_.get(); }
  // Hot-path test: record this call, or only forward it?
  bool ShouldRecord() const { return recording_.load(std::memory_order_relaxed) && !ReentryGuard::active(); }
  ShimMode mode() const { return mode_; }
  // Whether comm creation may get the shim's config (trafficClass by role,
  // comm_traffic_class.h): TRIRACE_MODE=schedule was asked for and this
  // NCCL's ncclConfig_t layout is known. True also where gating fell back to
  // observing for want of a device: a traffic class needs none.
  bool shapes_comm_config() const { return shapes_comm_config_; }
  bool scheduling() const { return launcher_ != nullptr && launcher_->gated(); }
  CommRegistry& registry() { return registry_; }
  // Every comm creating calls returned, and which were destroyed
  // (comm_ledger.h); kept in every mode but off.
  CommLedger& ledger() { return ledger_; }

  // Bad input the shim refuses itself (shim_checks.cc), only while it
  // records: where the real NCCL would read through a comm that is not
  // one, or size buffers with a count whose bytes overflow size_t. Each
  // refusal is one WARN naming the call, the argument, its value and what
  // is accepted, and ncclInvalidArgument; the real library never sees the
  // argument (inside a group it gets the call with comm=NULL instead, so
  // that it fails the whole group, as it fails a group with any bad call).
  //
  // ncclSuccess: `comm` (an argument of `function`) may be passed on: NULL
  // (the real library reports that itself), registered, or not known for
  // sure to be bad (CommLedger::Verdict). Otherwise the refusal's result;
  // `group_call`: the caller passes the call on with comm=NULL inside a
  // group (a call NCCL queues in groups), which the warning says.
  ncclResult_t CheckComm(ncclComm_t comm, const char* function, bool group_call);
  // The comm and count of a communication call; sets op.bytes. A refused
  // op has been answered: *result holds the call's return value.
  bool RefuseOp(Op& op, ncclResult_t* result);

  // The result for a call whose real function is missing: one WARN per
  // function, then ncclSystemError (no real NCCL) or ncclInvalidUsage
  // (this NCCL lacks the function).
  ncclResult_t Unavailable(const char* function);
  // The text ncclGetErrorString/ncclGetLastError return without a real NCCL.
  const char* UnavailableText() const;

  // The observe path of every collective / point-to-point wrapper.
  ncclResult_t IssueOp(Op& op);
  ncclResult_t GroupStart();
  ncclResult_t GroupEnd();
  ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info);

  // Comm lifecycle, called by the wrappers around the real call.
  // Returns the registered state, or nullptr (failed call, no comm).
  CommState* OnCommCreated(const NewComm& created, int64_t start_ns, ncclResult_t result);
  // After a creating call returned ncclSuccess: hands the new blocking comms
  // to the launcher (Launcher::CommsReady), or, inside a group, keeps them
  // until its outermost end succeeded.
  void OnCommsReady(std::span<CommState* const> states);
  // Before the real destroy/abort/finalize: takes the comm out of the
  // registry (so a new comm reusing the address is never confused with it).
  CommState* OnCommRemoving(ncclComm_t comm);
  // After it: records the call; logs the summary when no comm is left.
  void OnCommRemoved(CommCall call, CommState* state, int64_t start_ns, ncclResult_t result);
  // Records a call on an existing comm (ncclCommRevoke).
  void OnCommCall(CommCall call, ncclComm_t comm, int64_t start_ns, ncclResult_t result);

  // Distinguishes the comms of successive ncclCommInitAll calls.
  uint64_t NextInitAllSequence() { return init_all_count_.fetch_add(1, std::memory_order_relaxed); }

  // Annotation hooks.
  bool SetCommRole(ncclComm_t comm, int role);
  void RecordIteration(int64_t iteration, bool begin);

  // Internal failure: one WARN, then pure forwarding for the process.
  void Disable(const std::string& why);

  // Exit hook: waits up to kExitDrain for the records still in flight,
  // then the summary and trace footer. Idempotent. Nothing in a forked
  // child (no threads of the parent's to stop, join or drain).
  void Shutdown();
  static constexpr absl::Duration kExitDrain = absl::Seconds(1);

 private:
  Shim() = default;
  static Shim* Create();
  void Initialize();
  void FinishOp(TraceRecord& record, CommState* state);
  // RecordSink: records taken by the gated launcher.
  void RecordStarted() override { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void RecordFinished(TraceRecord& record, CommState* state) override;
  void RecordEvent(const TraceRecord& record) override;
  static void OnStreamDone(void* pending);
  // Ends `record` at the op's completion on `stream` (watched, on `state`'s
  // device), or now where that cannot be tracked. The record counts as in flight.
  void TrackCompletion(const TraceRecord& record, CommState* state, cudaStream_t stream);
  // The outermost level of `group` closed: finishes the records the
  // launcher did not take (tracked when the group `launched`, else ended
  // now) and resets the group.
  void EndGroup(UserGroup& group, bool launched);
  // The start-up verdict, at the first comm this process registers, where
  // the process is the job's rank 0 (start_verdict.h).
  void LogVerdictOnce(const CommState& first);
  // TRIRACE_METRICS_FILE: starts the writer (shim_metrics.cc); a bad
  // setting is one WARN and no metrics, the shim goes on.
  void StartMetrics();
  // The counters now (all but the links), for the metrics writer's thread.
  MetricsSnapshot MetricsNow() const;
  // A comm lifecycle record (init, finalize, destroy, ...) in the trace.
  void RecordCommEvent(CommCall call, const CommState* state, int64_t start_ns, ncclResult_t result);
  // The outermost level of `group` closed with `result`: the comm slots its
  // creating calls left are read (comm_ledger.h).
  void ResolveGroupCreations(UserGroup& group, ncclResult_t result);

  std::unique_ptr<RealNccl> real_;
  std::string resolve_error_;
  // Before launcher_: the gated launcher borrows it. nullptr: no backend
  // (records end at the call's return; no schedule mode).
  std::unique_ptr<device::Device> device_;
  // On device_, before launcher_ (which borrows it too): completions of the
  // ops the shim tracks (nullptr with device_).
  std::unique_ptr<StreamWatcher> watcher_;
  std::unique_ptr<Launcher> launcher_;
  std::unique_ptr<TraceWriter> trace_;
  GateCounters gate_counters_;  // counted only while metrics_ writes them
  std::unique_ptr<MetricsFile> metrics_;  // after what its snapshots read: stopped first
  CommRegistry registry_;
  CommLedger ledger_;
  ShimMode mode_ = ShimMode::kOff;
  StartVerdict verdict_;  // set by Initialize; logged at the job's rank 0 (OnCommCreated)
  std::atomic<bool> verdict_logged_{false};
  bool shapes_comm_config_ = false;
  int version_ = 0;
  std::atomic<bool> recording_{false};
  std::atomic<bool> disabled_{false};
  mutable absl::Mutex disable_mutex_;
  std::string disable_reason_ ABSL_GUARDED_BY(disable_mutex_);  // Disable()'s why, for the metrics
  std::atomic<uint64_t> in_flight_{0};
  // User groups begun and not ended, and the op records in them (counted in
  // in_flight_, never finished if the process exits first: Shutdown).
  std::atomic<int64_t> open_groups_{0};
  std::atomic<uint64_t> open_group_ops_{0};
  pid_t owner_pid_ = 0;  // the process that created the shim; a forked child's Shutdown does nothing
  std::atomic<uint64_t> next_group_id_{0};
  std::atomic<uint64_t> init_all_count_{0};
  std::atomic<bool> shut_down_{false};

  absl::Mutex finalized_mutex_;
  // Comms finalized but not yet destroyed.
  std::map<ncclComm_t, CommState*> finalized_ ABSL_GUARDED_BY(finalized_mutex_);
  absl::Mutex warned_mutex_;
  // Functions the real library lacks, warned about once each.
  std::map<std::string, bool> warned_unavailable_ ABSL_GUARDED_BY(warned_mutex_);
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_SHIM_H_
