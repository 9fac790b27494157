#include "common/clock.h"

#include <thread>

#include "gtest/gtest.h"

namespace trirace {
namespace {

TEST(ClockTest, MonotonicNeverGoesBackAndAdvancesAcrossASleep) {
  int64_t prev = MonotonicNs();
  for (int i = 0; i < 1000; ++i) {
    int64_t now = MonotonicNs();
    ASSERT_GE(now, prev);
    prev = now;
  }
  const int64_t before = RealClock::Get().NowNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_GE(RealClock::Get().NowNs() - before, 2'000'000);
}

TEST(ClockTest, ManualClockMovesOnlyWhenTold) {
  ManualClock clock(100);
  EXPECT_EQ(clock.NowNs(), 100);
  clock.AdvanceNs(50);
  EXPECT_EQ(clock.NowNs(), 150);
  clock.SetNs(1000);
  EXPECT_EQ(clock.NowNs(), 1000);
  clock.SetNs(10);  // never backwards
  EXPECT_EQ(clock.NowNs(), 1000);
  const Clock& as_interface = clock;
  EXPECT_EQ(as_interface.NowNs(), 1000);
}

}  // namespace
}  // namespace trirace
