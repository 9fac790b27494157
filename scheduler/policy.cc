#include "scheduler/policy.h"

namespace trirace::sched {

bool LinkState::HigherClassActive() const {
  for (TrafficClass c : {TrafficClass::kP2P, TrafficClass::kSparse, TrafficClass::kOther}) {
    if (running[ClassIndex(c)] != 0 || pending[ClassIndex(c)] != 0) return true;
  }
  return false;
}

double LinkState::ForeignFraction() const {
  if (capacity_bytes_per_s <= 0 || occupancy_ns < 0) return 0;
  return foreign_bytes_per_s / capacity_bytes_per_s;
}

uint64_t WireBytes(int64_t ns, double bytes_per_s, uint64_t fallback) {
  if (bytes_per_s <= 0) return fallback;
  return static_cast<uint64_t>(static_cast<double>(ns) * bytes_per_s / 1e9);
}

}  // namespace trirace::sched
