#include "interpose/gate_ticket.h"

#include "common/clock.h"
#include "interpose/gated_launcher.h"

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
  const uint32_t before = t->arrived.fetch_or(bit, std::memory_order_acq_rel);
  const uint32_t after = before | bit;
  if ((bit & kBoth) != 0 && (after & kBoth) == kBoth && (before & kBoth) != kBoth) {
    // Fails only for a task the engine already dropped at shutdown.
    t->launcher->engine().Complete(t->task, t->started_ns.load(std::memory_order_acquire)).IgnoreError();
  }
  if (after == GateTicket::kAll) delete t;
}

}  // namespace trirace::interpose
