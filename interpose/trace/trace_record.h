// TraceRecord: one event of the timeline, as it travels from the thread
// that produced it to the trace writer. Fixed size and trivially copyable,
// so the bounded ring (trace_buffer.h) copies it without allocation.
//
// Extending it: add a field with an "unset" default and have the writer
// emit it only when set (as the gated-launch fields below are), so older
// producers keep producing valid records.
#ifndef TRIRACE_INTERPOSE_TRACE_TRACE_RECORD_H_
#define TRIRACE_INTERPOSE_TRACE_TRACE_RECORD_H_

#include <cstdint>

#include "interpose/op.h"
#include "trirace/trirace.h"

namespace trirace::interpose {

enum class RecordKind : uint8_t {
  kOp,              // a collective or point-to-point call: a slice
  kCommEvent,       // init/split/shrink/finalize/destroy/abort: a slice
  kIterationBegin,  // trirace_iteration_begin: an instant
  kIterationEnd,    // trirace_iteration_end: an instant
  kTuning,          // the scheduler's tuner changed a link's window or credit
};

// Where an op slice's end time came from.
enum class CompletionSource : uint8_t {
  kReturn,  // the call's return (no device completion known)
  kStream,  // the stream reached the op (host streams, or a CUDA event)
};

// Comm lifecycle calls recorded as kCommEvent.
enum class CommCall : uint8_t {
  kInitRank,
  kInitRankConfig,
  kInitAll,
  kInitRankScalable,
  kSplit,
  kShrink,
  kFinalize,
  kDestroy,
  kAbort,
  kRevoke,
};
absl::string_view CommCallName(CommCall call);

struct TraceRecord {
  RecordKind kind = RecordKind::kOp;
  NcclFunc func = NcclFunc::kAllReduce;        // kOp
  CommCall comm_call = CommCall::kInitRank;  // kCommEvent
  CompletionSource completion = CompletionSource::kReturn;
  uint8_t op_class = 0;                // TrafficClass
  int32_t result = 0;                  // ncclResult_t the caller got
  int32_t datatype = 0;
  int32_t redop = 0;
  int32_t peer_or_root = -1;
  int32_t comm_index = 0;              // CommState::index; 0: untracked comm
  int32_t thread_id = 0;               // kernel tid of the calling thread
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t seq = 0;
  uint64_t group_id = 0;
  int64_t start_ns = 0;                // MonotonicNs()
  int64_t end_ns = 0;
  int64_t iteration = TRIRACE_UNSET;   // kIteration*
  trirace_tag_t tag = TRIRACE_TAG_INIT;

  // Gated launch (schedule mode). -1: not gated.
  int64_t gate_wait_ns = -1;           // call -> gate opened
  int64_t run_ns = -1;                 // gate opened -> completion
  int16_t release_reason = -1;         // the policy's reason code
  int32_t chunk_index = -1;
  int32_t chunk_count = -1;

  // kTuning (scheduler/window_tuner.h): the link's factors after the
  // change, why, and what the tuner measured.
  struct Tuning {
    int32_t link = -1;
    float window_scale = 1, credit_scale = 1;
    float p2p_slowdown = 0;  // 0: not judged
    int32_t samples = 0;
    float utilisation = 0, held_gap = 0, held_beside = 0;
    const char* why = "";  // a string literal (static storage)
  } tuning;
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_TRACE_TRACE_RECORD_H_
