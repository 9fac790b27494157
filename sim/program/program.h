// The simulator's input: what every rank of a job issues, as data. Every
// workload (the hybrid example's presets, generated models, replayed
// traces, single collectives) becomes a Workload; the simulator runs it in
// each mode.
//
// A rank has a host thread and GPU streams. The host walks its HostSteps in
// order: it enqueues ops on streams (taking no time), waits for an op to be
// done (a host synchronisation: an event wait, reading the loss), marks
// iteration boundaries (trirace_iteration_begin), or spends time itself.
// A stream runs its ops in enqueue order:
//   kCompute  takes duration_ns;
//   kRecord   done when reached (an event record);
//   kWait     done once the op it names is done (a stream waiting on an
//             event: the record the host issued last for it);
//   kComm     one NCCL call, or a group of calls (ncclGroupStart/End): it
//             posts them and is done once each call's part is done;
//   kStamp    done when reached; its time starts iteration `stamp`.
// Calls are matched across ranks as NCCL matches them: the k-th collective
// call of every member of a communicator is one collective; the k-th send
// from a to b (on one comm) meets the k-th receive at b from a.
//
// Use ProgramBuilder to write one: it names events by key, and a wait on a
// key resolves to the last record of that key, as CUDA events do.
//
// Thread safety: plain data; ProgramBuilder is single-threaded.
#ifndef TRIRACE_SIM_PROGRAM_PROGRAM_H_
#define TRIRACE_SIM_PROGRAM_PROGRAM_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/nccl_func.h"
#include "common/traffic_class.h"
#include "scheduler/chunk_planner.h"
#include "trirace/trirace.h"

namespace trirace::sim {

inline constexpr int kNoOp = -1;

struct CommSpec {
  std::string name;         // for traces and errors: "dp.stage1"
  std::vector<int> ranks;   // global ranks, by comm rank
  TrafficClass traffic_class = TrafficClass::kOther;  // its calls' class unless a call says otherwise
  bool pipeline = false;    // a pipeline comm (rule [R14] looks at these)
};

struct NcclCall {
  NcclFunc func = NcclFunc::kAllReduce;
  int comm = 0;             // index in Workload::comms
  // Bytes as NCCL counts them: AllReduce, Broadcast, Reduce the buffer;
  // AllGather each rank's input; ReduceScatter each rank's output;
  // AlltoAll what each rank sends each peer; Send / Recv the message.
  uint64_t bytes = 0;
  uint32_t elem_bytes = 4;
  sched::ReduceKind reduce = sched::ReduceKind::kSum;
  bool integer = false;
  int peer = -1;            // Send / Recv: the peer's comm rank
  TrafficClass traffic_class = TrafficClass::kOther;  // kOther: the comm's
  trirace_tag_t tag = TRIRACE_TAG_INIT;
};

// kGate is the simulator's own (a gated launch's gate wait); workloads do
// not use it.
enum class OpKind : uint8_t { kCompute, kRecord, kWait, kComm, kStamp, kGate };

struct StreamOp {
  OpKind kind = OpKind::kRecord;
  int stream = 0;
  int64_t duration_ns = 0;  // kCompute
  int wait_for = kNoOp;     // kWait: an op of the same rank
  int first_call = 0;       // kComm: RankProgram::calls[first_call, + call_count)
  int call_count = 0;
  int stamp = -1;           // kStamp
  int gate = -1;            // kGate (the simulator's)
  int64_t begin_iteration = -1;  // the simulator's: a kRecord that tells the engine an iteration began
  int completes = kNoOp;    // the simulator's: this op's end also ends that op
};

enum class HostKind : uint8_t { kEnqueue, kHostWait, kIterationBegin, kIterationEnd, kSpend };

struct HostStep {
  HostKind kind = HostKind::kEnqueue;
  int op = kNoOp;        // kEnqueue: the op; kHostWait: the op waited for (kNoOp: none)
  int64_t value = 0;     // kIteration*: the iteration; kSpend: nanoseconds
};

struct RankProgram {
  int streams = 1;
  std::vector<StreamOp> ops;
  std::vector<NcclCall> calls;
  std::vector<HostStep> host;
};

struct Workload {
  std::string name;
  std::vector<CommSpec> comms;
  std::vector<RankProgram> ranks;  // by global rank
  int iterations = 1;  // stamps 0 .. iterations, per rank
  int warmup = 0;      // iterations left out of the median
  // Several jobs on one cluster: job of each rank (empty: one job).
  std::vector<int> job_of_rank;
  std::vector<std::string> job_names;
};

// Builds one rank's program.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(int streams) { program_.streams = streams; }

  // Each returns the op's index.
  int Compute(int stream, int64_t ns);
  int Record(int stream, int64_t event_key);
  // Waits for the last Record of `event_key`; nothing (kNoOp) when none.
  int Wait(int stream, int64_t event_key);
  int Comm(int stream, std::vector<NcclCall> calls);
  int Stamp(int stream, int index);
  // The host waits for the last Record of `event_key` (nothing if none).
  void HostWait(int64_t event_key);
  void HostWaitOp(int op);
  void IterationBegin(int64_t iteration);
  void IterationEnd(int64_t iteration);
  void HostSpend(int64_t ns);
  // The last record of `event_key`, or kNoOp.
  int LastRecord(int64_t event_key) const;

  RankProgram Take() { return std::move(program_); }

 private:
  int Add(StreamOp op);

  RankProgram program_;
  std::map<int64_t, int> records_;
};

// Checks a workload's shape: comms name existing ranks, calls name existing
// comms and peers, every rank of a comm issues calls only on comms it is a
// member of, streams and waits are in range. The error names the rank, op
// and what is wrong.
bool ValidateWorkload(const Workload& w, std::string* error);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_PROGRAM_PROGRAM_H_
