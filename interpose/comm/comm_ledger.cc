#include "interpose/comm/comm_ledger.h"

namespace trirace::interpose {

void CommLedger::Begin() { running_.fetch_add(1, std::memory_order_acq_rel); }

void CommLedger::End() { running_.fetch_sub(1, std::memory_order_acq_rel); }

void CommLedger::Created(const ncclComm_t* comms, int n) {
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < n; ++i) {
    if (comms[i] != nullptr) comms_[comms[i]] = nullptr;  // live (again, if the address was a destroyed comm's)
  }
}

void CommLedger::Pending(bool in_group) {
  absl::MutexLock lock(&mu_);
  if (in_group) {
    ++pending_in_groups_;
  } else {
    unsure_forever_ = true;
  }
}

void CommLedger::GroupEnded(int n, bool later) {
  absl::MutexLock lock(&mu_);
  pending_in_groups_ -= n;
  if (later) unsure_forever_ = true;
}

void CommLedger::Destroying(ncclComm_t comm, const char* call) {
  absl::MutexLock lock(&mu_);
  auto it = comms_.find(comm);
  if (it == comms_.end() || it->second != nullptr) return;  // not a live comm: the caller refused it
  it->second = call;
  destroyed_order_.push_back(comm);
  while (destroyed_order_.size() > kMaxDestroyed) {
    auto old = comms_.find(destroyed_order_.front());
    if (old != comms_.end() && old->second != nullptr) comms_.erase(old);  // still destroyed: forget it
    destroyed_order_.pop_front();
  }
}

void CommLedger::Undestroyed(ncclComm_t comm) {
  absl::MutexLock lock(&mu_);
  auto it = comms_.find(comm);
  if (it != comms_.end()) it->second = nullptr;
}

CommLedger::Verdict CommLedger::Check(ncclComm_t comm, const char** how) const {
  if (running_.load(std::memory_order_acquire) > 0) return Verdict::kUnsure;
  absl::MutexLock lock(&mu_);
  auto it = comms_.find(comm);
  if (it != comms_.end() && it->second == nullptr) return Verdict::kLive;
  if (unsure_forever_ || pending_in_groups_ > 0) return Verdict::kUnsure;
  if (it == comms_.end()) return Verdict::kNever;
  if (how != nullptr) *how = it->second;
  return Verdict::kDestroyed;
}

size_t CommLedger::size() const {
  absl::MutexLock lock(&mu_);
  return comms_.size();
}

}  // namespace trirace::interpose
