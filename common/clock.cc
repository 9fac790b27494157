#include "common/clock.h"

#include <time.h>

namespace trirace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

RealClock& RealClock::Get() {
  static RealClock clock;
  return clock;
}

void ManualClock::SetNs(int64_t t_ns) {
  int64_t cur = now_ns_.load(std::memory_order_acquire);
  while (t_ns > cur && !now_ns_.compare_exchange_weak(cur, t_ns, std::memory_order_acq_rel)) {
  }
}

}  // namespace trirace
