// Time for TriRace: a monotonic clock helper and the Clock interface.
//
// The scheduler engine never reads the system clock directly; it asks a
// Clock. In the shim that is RealClock (CLOCK_MONOTONIC); in the simulator
// and in unit tests it is a clock whose time moves only when told to
// (ManualClock), so a policy's timing rules can be tested exactly.
//
// Times are int64 nanoseconds on the clock's own timeline. Only differences
// are meaningful across clocks.
//
// Thread safety: NowNs() of both implementations is thread-safe;
// ManualClock's setters may be called from any thread.
#ifndef TRIRACE_COMMON_CLOCK_H_
#define TRIRACE_COMMON_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace trirace {

// CLOCK_MONOTONIC in nanoseconds.
int64_t MonotonicNs();

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowNs() const = 0;
};

// The process's monotonic clock.
class RealClock final : public Clock {
 public:
  static RealClock& Get();
  int64_t NowNs() const override { return MonotonicNs(); }
};

// A clock that moves only when advanced; starts at `start_ns`.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ns = 0) : now_ns_(start_ns) {}
  int64_t NowNs() const override { return now_ns_.load(std::memory_order_acquire); }
  void AdvanceNs(int64_t delta_ns) { now_ns_.fetch_add(delta_ns, std::memory_order_acq_rel); }
  // Moves to `t_ns`; time never goes backwards (an earlier t is ignored).
  void SetNs(int64_t t_ns);

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace trirace

#endif  // TRIRACE_COMMON_CLOCK_H_
