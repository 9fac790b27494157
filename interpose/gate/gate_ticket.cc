#include "interpose/gate/gate_ticket.h"

#include "common/clock.h"
#include "interpose/gate/comm_lane.h"
#include "interpose/gate/gated_launcher.h"

namespace trirace::interpose {

void MarkRelease(GateTicket* t, sched::ReleaseReason reason) {
  int64_t unset = 0;
  const int64_t now = MonotonicNs();
  if (t->release_ns.compare_exchange_strong(unset, now, std::memory_order_acq_rel)) {
    t->reason = static_cast<int16_t>(reason);
  }
}

void Arrive(GateTicket* t, uint32_t bit) {
  constexpr uint32_t kBoth = GateTicket::kReleased | GateTicket::kDone;
  // The arriver that completes kBoth still reads the ticket after its bit
  // is in, so it holds the ticket with one more bit until it is done; only
  // the arriver that sets the last of all four frees it. (Freeing at the
  // third bit let the watchdog free a ticket under TicketDone's Complete:
  // a use after free that AddressSanitizer caught.)
  constexpr uint32_t kCompleted = GateTicket::kCompleted;
  constexpr uint32_t kEvery = GateTicket::kAll | kCompleted;
  const uint32_t before = t->arrived.fetch_or(bit, std::memory_order_acq_rel);
  uint32_t after = before | bit;
  if ((bit & kBoth) != 0 && (after & kBoth) == kBoth && (before & kBoth) != kBoth) {
    // Fails only for a task the engine already dropped at shutdown.
    t->launcher->engine().Complete(t->task, t->started_ns.load(std::memory_order_acquire)).IgnoreError();
    after = t->arrived.fetch_or(kCompleted, std::memory_order_acq_rel) | kCompleted;
  }
  if (after == kEvery) {
    CommLane* lane = t->lane;
    delete t;
    if (lane != nullptr) lane->TicketFreed();  // last: a retired lane may go once this is 0
  }
}

}  // namespace trirace::interpose
