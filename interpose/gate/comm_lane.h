// CommLane: the per-communicator machinery of the gated launch
// (gated_launcher.h); the tickets that flow through it are in gate_ticket.h.
//
// A CommLane is created on a comm's first gated op (CommState::lane). When
// the comm is destroyed the launcher retires it to the watchdog, which frees
// it once idle: no ticket of it alive (so no gate wait of it left on D) and
// nothing watched. It owns the comm's dedicated stream D, two reusable
// events (a stream wait captures an event's recorded point at the time of the
// wait, so one E_in and one E_done serve every op), and a ring of kGateSlots
// gate words. Gate use n of the lane waits on word n % kGateSlots for value
// n / kGateSlots + 1; opening stores that value (never lowering a word, so a
// late or repeated open is harmless). A slot is reused only once its previous
// use was opened: with more than kGateSlots gates of one comm still closed the
// next op runs ungated (AcquireGate says so).
//
// Thread safety: CommLane::mu serialises the issue path of one comm (stream
// operations must reach the streams in one order); gate words are atomics;
// the watch list has its own lock (the watchdog never takes mu).
#ifndef TRIRACE_INTERPOSE_GATE_COMM_LANE_H_
#define TRIRACE_INTERPOSE_GATE_COMM_LANE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "interpose/comm/comm_state.h"
#include "interpose/device/device.h"
#include "interpose/gate/gate_ticket.h"
#include "interpose/trace/trace_record.h"
#include "scheduler/task.h"

namespace trirace::interpose {

// Raises gate word `index` to `value` (cyclic compare); false when it was
// already open for `value`.
bool OpenGateWord(const device::GateBlock& gates, size_t index, uint32_t value);
// True when word `index` is open for `value`.
bool GateWordOpen(const device::GateBlock& gates, size_t index, uint32_t value);
// Opens gated ticket `t`'s gate for `reason`: stamps the release
// (MarkRelease) first, so whatever runs once the stream passes the gate
// (the record's completion) finds it stamped. False when already open.
bool ReleaseGate(GateTicket* t, sched::ReleaseReason reason);

// One gate the watchdog must see open by `deadline_ns`.
struct WatchEntry {
  int64_t deadline_ns = 0;
  GateTicket* ticket = nullptr;
};

class CommLane {
 public:
  static constexpr size_t kGateSlots = 1024;

  // Creates D, the two events and the gate ring on `dev` (in the calling
  // thread's current device, the comm's); `gates`, when given, is a ring
  // of kGateSlots words of that device that no stream waits on (reused).
  static absl::StatusOr<std::unique_ptr<CommLane>> Create(device::Device& dev, CommState* comm,
                                                          std::unique_ptr<device::GateBlock> gates = nullptr);
  ~CommLane();
  CommLane(const CommLane&) = delete;
  CommLane& operator=(const CommLane&) = delete;

  device::StreamHandle stream() const { return stream_; }
  device::EventHandle in_event() const { return in_event_; }
  device::EventHandle done_event() const { return done_event_; }
  const device::GateBlock& gates() const { return *gates_; }
  CommState* comm() const { return comm_; }
  int device() const { return comm_->device; }

  // Next gate use (mu held): false when its slot's previous use is still
  // closed (then the unit runs without a gate).
  bool AcquireGate(uint32_t* slot, uint32_t* value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Tickets of this lane not yet freed (gate_ticket.cc): counted up by the
  // launcher when it makes one, down by the ticket's last arrival, which
  // touches the lane no more after that.
  void TicketMade() { live_tickets_.fetch_add(1, std::memory_order_relaxed); }
  void TicketFreed() { live_tickets_.fetch_sub(1, std::memory_order_acq_rel); }
  // No ticket alive and nothing watched: every gate wait queued on D has
  // passed and nobody but the lane's owner refers to it.
  bool Idle() ABSL_LOCKS_EXCLUDED(watch_mu_);
  // Hands over the gate ring of an idle lane (zeroed), for the next lane.
  std::unique_ptr<device::GateBlock> TakeGates();

  // The watch list (own lock).
  void Watch(const WatchEntry& e) ABSL_LOCKS_EXCLUDED(watch_mu_);
  // Empties the watch list with the watchdog's arrival on each ticket (the
  // watchdog has stopped and will not look again); a ticket whose other
  // arrivals are in is freed.
  void DropWatches() ABSL_LOCKS_EXCLUDED(watch_mu_);
  // Drops entries whose gate is open; opens the ones past `now` (calls
  // `expired` for each before opening). Returns the earliest deadline left,
  // or sched::kNeverNs.
  template <typename Fn>
  int64_t Sweep(int64_t now, Fn&& expired) ABSL_LOCKS_EXCLUDED(watch_mu_);

  absl::Mutex mu;  // the issue path

 private:
  CommLane(device::Device& dev, CommState* comm) : dev_(dev), comm_(comm) {}

  device::Device& dev_;
  CommState* const comm_;
  device::StreamHandle stream_ = nullptr;
  device::EventHandle in_event_ = nullptr;
  device::EventHandle done_event_ = nullptr;
  std::unique_ptr<device::GateBlock> gates_;
  uint64_t uses_ ABSL_GUARDED_BY(mu) = 0;
  std::atomic<int64_t> live_tickets_{0};

  absl::Mutex watch_mu_;
  std::deque<WatchEntry> watch_ ABSL_GUARDED_BY(watch_mu_);
};

template <typename Fn>
int64_t CommLane::Sweep(int64_t now, Fn&& expired) {
  std::vector<GateTicket*> finished;
  int64_t next = sched::kNeverNs;
  {
    absl::MutexLock lock(&watch_mu_);
    while (!watch_.empty()) {
      WatchEntry& e = watch_.front();
      if (!GateWordOpen(*gates_, e.ticket->slot, e.ticket->value)) {
        if (e.deadline_ns > now) {
          next = e.deadline_ns;
          break;
        }
        expired(e.ticket);
      }
      finished.push_back(e.ticket);
      watch_.pop_front();
    }
  }
  // Outside the lock: the last arrival frees the ticket.
  for (GateTicket* t : finished) Arrive(t, GateTicket::kWatched);
  return next;
}

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_COMM_LANE_H_
