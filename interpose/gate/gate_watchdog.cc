#include "interpose/gate/gate_watchdog.h"

#include <algorithm>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/clock.h"

namespace trirace::interpose {

GateWatchdog::GateWatchdog(int64_t floor_bound_ns, std::function<void(GateTicket*)> expired,
                           std::function<void(std::unique_ptr<CommLane>)> free_lane)
    : coalesce_ns_(std::max<int64_t>(floor_bound_ns / 16, 1000)),
      expired_(std::move(expired)),
      free_lane_(std::move(free_lane)) {}

GateWatchdog::~GateWatchdog() { Stop(); }

absl::Status GateWatchdog::Start() {
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot start the gate watchdog thread: ", e.what()));
  }
  return absl::OkStatus();
}

void GateWatchdog::Stop() {
  {
    absl::MutexLock lock(&mu_);  // releasing it wakes the thread: stop_ is in its wait condition
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  // Nothing sweeps or frees lanes from here on, and Watch() adds nothing:
  // the watchdog is done with the tickets it still watches, so each is freed
  // by its last other arrival instead of being left behind on its lane.
  // Once: a later Stop() (the destructor's) may come after the owner freed
  // its lanes.
  std::vector<CommLane*> lanes;
  {
    absl::MutexLock lock(&mu_);
    lanes.swap(lanes_);  // retiring lanes included: they stay in the sweep until freed
  }
  for (CommLane* lane : lanes) lane->DropWatches();
}

void GateWatchdog::AddLane(CommLane* lane) {
  absl::MutexLock lock(&mu_);
  lanes_.push_back(lane);
}

void GateWatchdog::Retire(std::unique_ptr<CommLane> lane) {
  absl::MutexLock lock(&mu_);
  retiring_.push_back(std::move(lane));
  if (sleeping_until_ == 0) {
    dirty_ = true;
  } else {
    sleeping_until_ = std::min<int64_t>(sleeping_until_, MonotonicNs());  // wakes it to look
  }
}

size_t GateWatchdog::retiring() const {
  absl::MutexLock lock(&mu_);
  return retiring_.size();
}

void GateWatchdog::FreeIdleLanes() {
  std::vector<std::unique_ptr<CommLane>> idle;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = retiring_.begin(); it != retiring_.end();) {
      if (!(*it)->Idle()) {
        ++it;
        continue;
      }
      lanes_.erase(std::remove(lanes_.begin(), lanes_.end(), it->get()), lanes_.end());
      idle.push_back(std::move(*it));
      it = retiring_.erase(it);
    }
  }
  for (std::unique_ptr<CommLane>& lane : idle) {
    { absl::MutexLock issuing(&lane->mu); }  // an issuer still inside (a use after destroy) is out
    // Counted first: whoever free_lane_ tells (a test) finds it counted.
    lanes_freed_.fetch_add(1, std::memory_order_relaxed);
    if (free_lane_) {
      free_lane_(std::move(lane));
    } else {
      lane.reset();
    }
  }
}

void GateWatchdog::Watch(CommLane* lane, GateTicket* ticket, int64_t call_ns, int64_t bound_ns) {
  const int64_t deadline = call_ns + bound_ns - bound_ns / 16;
  {
    absl::MutexLock lock(&mu_);
    if (!stop_) {
      lane->Watch({deadline, ticket});  // under mu_: Stop() drops every watch made before it
      if (sleeping_until_ == 0) {
        dirty_ = true;  // awake: it sweeps again before sleeping
      } else if (deadline < sleeping_until_) {
        sleeping_until_ = deadline;  // wakes the thread (typically only when it sleeps without timeout)
      }
      return;
    }
  }
  Arrive(ticket, GateTicket::kWatched);  // stopped: the launcher's shutdown opens the gate
}

void GateWatchdog::Run() {
  mu_.Lock();
  while (!stop_) {
    const std::vector<CommLane*> lanes = lanes_;
    const bool retiring = !retiring_.empty();
    sleeping_until_ = 0;  // awake: Watch() marks dirty_ instead of waking it
    dirty_ = false;
    mu_.Unlock();
    const int64_t now = MonotonicNs();
    int64_t next = sched::kNeverNs;
    for (CommLane* lane : lanes) {
      next = std::min(next, lane->Sweep(now, [this](GateTicket* t) {
        expired_(t);
        if (OpenGateWord(t->lane->gates(), t->slot, t->value)) opened_.fetch_add(1, std::memory_order_relaxed);
      }));
    }
    if (retiring) {
      FreeIdleLanes();
      next = std::min(next, MonotonicNs() + kRetirePollNs);
    }
    mu_.Lock();
    if (stop_) break;
    if (dirty_) continue;  // a Watch() came in during the sweep
    if (next == sched::kNeverNs) {
      sleeping_until_ = sched::kNeverNs;
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || sleeping_until_ != sched::kNeverNs; };
      mu_.Await(absl::Condition(&woken));
    } else {
      const int64_t wake = std::max(next, now + coalesce_ns_);
      sleeping_until_ = wake;
      auto woken = [this, wake]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || sleeping_until_ < wake; };
      mu_.AwaitWithTimeout(absl::Condition(&woken), absl::Nanoseconds(wake - MonotonicNs()));
    }
  }
  mu_.Unlock();
}

}  // namespace trirace::interpose
