// GateTicket: what the gated launch hands the engine as one task: a gated
// op, one chunk of it, a gated user group, or an ungated P2P op (tracked for
// link state). Three parties hold it: the engine's release (OpenGate), the completion
// callback (the stream watcher's), and the watchdog (gate_watchdog.h). Each calls
// Arrive() with its bit once; the second of release/completion tells the
// engine the task completed, and the last of the three frees the ticket.
//
// Thread safety: the fields are written by the launching thread before the
// ticket is shared; afterwards only the atomics change, and Arrive() decides
// who frees it.
#ifndef TRIRACE_INTERPOSE_GATE_GATE_TICKET_H_
#define TRIRACE_INTERPOSE_GATE_GATE_TICKET_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "interpose/comm/comm_state.h"
#include "interpose/trace/trace_record.h"
#include "scheduler/task.h"

namespace trirace::interpose {

class CommLane;
class GatedLauncher;

struct GateTicket {
  static constexpr uint32_t kReleased = 1;  // the engine opened the gate (or it had none)
  static constexpr uint32_t kDone = 2;      // the stream ran past the ticket's work
  static constexpr uint32_t kWatched = 4;   // the watchdog is done with it
  static constexpr uint32_t kAll = 7;
  // Set by the arriver that completed kReleased | kDone once it has told the
  // engine; the ticket is freed when kAll and this are in (Arrive).
  static constexpr uint32_t kCompleted = 8;

  GatedLauncher* launcher = nullptr;
  CommLane* lane = nullptr;  // nullptr: no gate (P2P on the user stream)
  sched::TaskId task = 0;
  bool gated = false;
  uint32_t slot = 0;
  uint32_t value = 0;
  std::atomic<uint32_t> arrived{0};
  std::atomic<int> streams_left{1};  // completion callbacks still to come
  // First opener writes these, before opening the word.
  std::atomic<int64_t> release_ns{0};
  // When the stream reached an ungated P2P op (host streams only; -1:
  // unknown), for the engine's tuner.
  std::atomic<int64_t> started_ns{-1};
  int16_t reason = -1;  // sched::ReleaseReason, written with release_ns
  uint32_t chunk_index = 0;
  uint32_t chunk_count = 1;
  CommState* state = nullptr;
  std::vector<TraceRecord> records;  // finished at completion
};

// Records `bit` (kReleased, kDone or kWatched) on `ticket`; tells the engine
// the task completed once both kReleased and kDone are in; frees the ticket
// after the last bit.
void Arrive(GateTicket* ticket, uint32_t bit);

// Stamps the first opening of the ticket's gate (time and reason); later
// openings change nothing.
void MarkRelease(GateTicket* ticket, sched::ReleaseReason reason);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_GATE_TICKET_H_
