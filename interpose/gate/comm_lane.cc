#include "interpose/gate/comm_lane.h"

#include "absl/strings/str_cat.h"

namespace trirace::interpose {

bool OpenGateWord(const device::GateBlock& gates, size_t index, uint32_t value) {
  std::atomic_ref<uint32_t> word(*gates.host_word(index));
  uint32_t current = word.load(std::memory_order_acquire);
  while (static_cast<int32_t>(value - current) > 0) {
    if (word.compare_exchange_weak(current, value, std::memory_order_release, std::memory_order_acquire)) return true;
  }
  return false;
}

bool GateWordOpen(const device::GateBlock& gates, size_t index, uint32_t value) {
  return static_cast<int32_t>(gates.Value(index) - value) >= 0;
}

bool ReleaseGate(GateTicket* t, sched::ReleaseReason reason) {
  MarkRelease(t, reason);
  return OpenGateWord(t->lane->gates(), t->slot, t->value);
}

absl::StatusOr<std::unique_ptr<CommLane>> CommLane::Create(device::Device& dev, CommState* comm,
                                                           std::unique_ptr<device::GateBlock> gates) {
  std::unique_ptr<CommLane> lane(new CommLane(dev, comm));
  absl::StatusOr<device::StreamHandle> stream = dev.CreateStream();
  if (!stream.ok()) return stream.status();
  lane->stream_ = *stream;
  for (device::EventHandle* e : {&lane->in_event_, &lane->done_event_}) {
    absl::StatusOr<device::EventHandle> event = dev.CreateEvent();
    if (!event.ok()) return event.status();
    *e = *event;
  }
  if (gates != nullptr && gates->size() == kGateSlots) {
    lane->gates_ = std::move(gates);
    return lane;
  }
  absl::StatusOr<std::unique_ptr<device::GateBlock>> made = dev.AllocateGates(kGateSlots);
  if (!made.ok()) return made.status();
  lane->gates_ = *std::move(made);
  return lane;
}

CommLane::~CommLane() {
  // Reached when creation failed part way, or for an idle retired lane (on
  // the watchdog's thread: the comm's device is made current). Destroying a
  // stream or event never waits on either backend: work still queued behind
  // D (the user streams' waits on E_done) runs as queued.
  absl::StatusOr<device::CurrentDevice> current =
      comm_->device >= 0 ? dev_.MakeCurrent(comm_->device) : absl::StatusOr<device::CurrentDevice>(device::CurrentDevice());
  if (in_event_ != nullptr) dev_.DestroyEvent(in_event_).IgnoreError();
  if (done_event_ != nullptr) dev_.DestroyEvent(done_event_).IgnoreError();
  if (stream_ != nullptr) dev_.DestroyStream(stream_).IgnoreError();
}

bool CommLane::AcquireGate(uint32_t* slot, uint32_t* value) {
  const uint64_t use = uses_;
  *slot = static_cast<uint32_t>(use % kGateSlots);
  *value = static_cast<uint32_t>(use / kGateSlots + 1);
  // The slot's previous use waited for value - 1; it must be open already.
  if (use >= kGateSlots && !GateWordOpen(*gates_, *slot, *value - 1)) return false;
  ++uses_;
  return true;
}

bool CommLane::Idle() {
  if (live_tickets_.load(std::memory_order_acquire) != 0) return false;
  absl::MutexLock lock(&watch_mu_);
  return watch_.empty();
}

std::unique_ptr<device::GateBlock> CommLane::TakeGates() {
  if (gates_ != nullptr) gates_->Reset();
  return std::move(gates_);
}

void CommLane::Watch(const WatchEntry& e) {
  absl::MutexLock lock(&watch_mu_);
  watch_.push_back(e);
}

void CommLane::DropWatches() {
  std::deque<WatchEntry> dropped;
  {
    absl::MutexLock lock(&watch_mu_);
    dropped.swap(watch_);
  }
  for (const WatchEntry& e : dropped) Arrive(e.ticket, GateTicket::kWatched);  // may free it
}

}  // namespace trirace::interpose
