#include "common/counter_rates.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kSecond = 1'000'000'000;

TEST(CounterRatesTest, RatesAreDeltasOverTheIntervalPerCounter) {
  CounterRates rates;
  EXPECT_THAT(rates.Update("eth0", 0, {100, 7}), IsEmpty()) << "first reading";
  EXPECT_THAT(rates.Update("eth0", kSecond / 2, {1100, 7}), ElementsAre(2000.0, 0.0));
  EXPECT_THAT(rates.Update("eth0", 2 * kSecond / 2, {1100, 507}), ElementsAre(0.0, 1000.0));
}

TEST(CounterRatesTest, KeysAreSeparateSeries) {
  CounterRates rates;
  EXPECT_THAT(rates.Update("a", 0, {0}), IsEmpty());
  EXPECT_THAT(rates.Update("b", kSecond, {50}), IsEmpty()) << "b's first reading";
  EXPECT_THAT(rates.Update("a", kSecond, {10}), ElementsAre(10.0));
  EXPECT_THAT(rates.Update("b", 2 * kSecond, {150}), ElementsAre(100.0));
}

TEST(CounterRatesTest, ACounterGoingBackwardsRestartsTheSeries) {
  CounterRates rates;
  rates.Update("eth0", 0, {1000, 1000});
  EXPECT_THAT(rates.Update("eth0", kSecond, {2000, 10}), IsEmpty()) << "rx went backwards";
  EXPECT_THAT(rates.Update("eth0", 2 * kSecond, {2500, 30}), ElementsAre(500.0, 20.0)) << "from the reset";
}

TEST(CounterRatesTest, NoRateWhenTheClockDidNotAdvanceOrTheShapeChanged) {
  CounterRates rates;
  rates.Update("eth0", kSecond, {10});
  EXPECT_THAT(rates.Update("eth0", kSecond, {20}), IsEmpty()) << "same time";
  EXPECT_THAT(rates.Update("eth0", 2 * kSecond, {30, 0}), IsEmpty()) << "two counters now";
  EXPECT_THAT(rates.Update("eth0", 3 * kSecond, {40, 5}), ElementsAre(10.0, 5.0));
  rates.Clear();
  EXPECT_THAT(rates.Update("eth0", 4 * kSecond, {50, 6}), IsEmpty()) << "forgotten";
}

}  // namespace
}  // namespace trirace
