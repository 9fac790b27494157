#include "interpose/comm/comm_registry.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace trirace::interpose {
namespace {

// Marks a removed slot; never a valid ncclComm_t (odd, near the top).
ncclComm_t Tombstone() { return reinterpret_cast<ncclComm_t>(~uintptr_t{0}); }

size_t RoundUpPowerOfTwo(size_t n) {
  size_t p = 16;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

CommRegistry::CommRegistry(size_t capacity) {
  // Twice the capacity keeps probe chains short at full load.
  const size_t n = RoundUpPowerOfTwo(capacity * 2);
  slots_ = std::make_unique<Slot[]>(n);
  mask_ = n - 1;
}

size_t CommRegistry::Home(ncclComm_t comm) const {
  uint64_t x = reinterpret_cast<uintptr_t>(comm);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<size_t>(x) & mask_;
}

CommState* CommRegistry::Find(ncclComm_t comm) const {
  if (comm == nullptr) return nullptr;
  for (size_t i = Home(comm), probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
    ncclComm_t key = slots_[i].key.load(std::memory_order_acquire);
    if (key == comm) return slots_[i].value.load(std::memory_order_acquire);
    if (key == nullptr) return nullptr;
  }
  return nullptr;
}

absl::StatusOr<CommState*> CommRegistry::Register(std::unique_ptr<CommState> state) {
  absl::MutexLock lock(&mutex_);
  ncclComm_t comm = state->comm;
  if (comm == nullptr || comm == Tombstone()) {
    return absl::InvalidArgumentError("CommRegistry::Register: state->comm is not a communicator");
  }
  Slot* existing = nullptr;
  Slot* free_slot = nullptr;
  for (size_t i = Home(comm), probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
    ncclComm_t key = slots_[i].key.load(std::memory_order_relaxed);
    if (key == comm) {
      existing = &slots_[i];
      break;
    }
    if (key == Tombstone() && free_slot == nullptr) free_slot = &slots_[i];
    if (key == nullptr) {
      if (free_slot == nullptr) free_slot = &slots_[i];
      break;
    }
  }
  if (existing == nullptr && (free_slot == nullptr || live_.load(std::memory_order_relaxed) >= (mask_ + 1) / 2)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the comm registry is full (", (mask_ + 1) / 2, " live communicators)"));
  }
  CommState* raw = state.get();
  raw->index = static_cast<int>(all_.size()) + 1;
  all_.push_back(std::move(state));
  if (existing != nullptr) {
    CommState* old = existing->value.load(std::memory_order_relaxed);
    if (old != nullptr) old->live.store(false, std::memory_order_relaxed);
    existing->value.store(raw, std::memory_order_release);
  } else {
    // Value first: a reader that sees the key also sees its value.
    free_slot->value.store(raw, std::memory_order_release);
    free_slot->key.store(comm, std::memory_order_release);
    live_.fetch_add(1, std::memory_order_relaxed);
  }
  if (first_rank_.load(std::memory_order_relaxed) < 0) first_rank_.store(raw->rank, std::memory_order_relaxed);
  return raw;
}

CommState* CommRegistry::Remove(ncclComm_t comm) {
  if (comm == nullptr) return nullptr;
  absl::MutexLock lock(&mutex_);
  for (size_t i = Home(comm), probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
    ncclComm_t key = slots_[i].key.load(std::memory_order_relaxed);
    if (key == comm) {
      CommState* state = slots_[i].value.load(std::memory_order_relaxed);
      slots_[i].key.store(Tombstone(), std::memory_order_release);
      live_.fetch_sub(1, std::memory_order_relaxed);
      if (state != nullptr) state->live.store(false, std::memory_order_relaxed);
      return state;
    }
    if (key == nullptr) return nullptr;
  }
  return nullptr;
}

void CommRegistry::ForEach(const std::function<void(CommState&)>& fn) const {
  absl::MutexLock lock(&mutex_);
  for (const auto& s : all_) fn(*s);
}

}  // namespace trirace::interpose
