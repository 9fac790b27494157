// HandleTable: maps the opaque handles the plugin gives NCCL (comms) to
// objects, so a call with a closed, foreign or garbage handle is detected
// and answered with an error instead of touching freed memory.
//
// A handle is (generation << 32) | (index + 1): each slot's generation
// changes when its object is removed, so stale handles never match again.
// Lookup is lock-free; Insert and Remove take a mutex (not on the data path).
//
// Thread safety: thread-safe. Removing an object while another thread still
// uses it is the caller's problem (NCCL never does that).
#ifndef TRIRACE_PLUGIN_CORE_HANDLE_TABLE_H_
#define TRIRACE_PLUGIN_CORE_HANDLE_TABLE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace trirace::net {

template <typename T, uint32_t kCapacity>
class HandleTable {
 public:
  HandleTable() : slots_(new Slot[kCapacity]) {
    free_.reserve(kCapacity);
    for (uint32_t i = kCapacity; i > 0; --i) free_.push_back(i - 1);
  }

  // Returns 0 when the table is full.
  uint64_t Insert(T* object) {
    absl::MutexLock lock(&mu_);
    if (free_.empty()) return 0;
    uint32_t index = free_.back();
    free_.pop_back();
    Slot& s = slots_[index];
    s.object.store(object, std::memory_order_relaxed);
    uint32_t gen = s.generation.load(std::memory_order_relaxed) + 1;
    if (gen == 0) gen = 1;
    s.generation.store(gen, std::memory_order_release);
    return (uint64_t{gen} << 32) | (index + 1);
  }

  // nullptr for a handle that is not live.
  T* Lookup(uint64_t handle) const {
    uint32_t index = static_cast<uint32_t>(handle & 0xffffffffu) - 1;
    if (index >= kCapacity) return nullptr;
    const Slot& s = slots_[index];
    if (s.generation.load(std::memory_order_acquire) != static_cast<uint32_t>(handle >> 32)) {
      return nullptr;
    }
    return s.object.load(std::memory_order_acquire);
  }

  // Removes and returns the object (nullptr if the handle is not live).
  T* Remove(uint64_t handle) {
    absl::MutexLock lock(&mu_);
    T* object = Lookup(handle);
    if (object == nullptr) return nullptr;
    uint32_t index = static_cast<uint32_t>(handle & 0xffffffffu) - 1;
    Slot& s = slots_[index];
    s.generation.store(s.generation.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    s.object.store(nullptr, std::memory_order_relaxed);
    free_.push_back(index);
    return object;
  }

  // Lookup by slot index and the low bits of the generation (`gen_bits`
  // under `gen_mask`), for handles that pack less than the full generation.
  T* LookupPacked(uint32_t index, uint32_t gen_bits, uint32_t gen_mask) const {
    if (index >= kCapacity) return nullptr;
    const Slot& s = slots_[index];
    uint32_t gen = s.generation.load(std::memory_order_acquire);
    if ((gen & 1u) == 0 || (gen & gen_mask) != gen_bits) return nullptr;
    return s.object.load(std::memory_order_acquire);
  }

  static uint32_t IndexOf(uint64_t handle) { return static_cast<uint32_t>(handle & 0xffffffffu) - 1; }
  static uint32_t GenerationOf(uint64_t handle) { return static_cast<uint32_t>(handle >> 32); }

 private:
  struct Slot {
    std::atomic<uint32_t> generation{0};
    std::atomic<T*> object{nullptr};
  };
  std::unique_ptr<Slot[]> slots_;
  absl::Mutex mu_;
  std::vector<uint32_t> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_HANDLE_TABLE_H_
