#include "interpose/comm/comm_registry.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

ncclComm_t Fake(uintptr_t n) { return reinterpret_cast<ncclComm_t>(n * 64); }

std::unique_ptr<CommState> State(ncclComm_t comm, int rank = 0) {
  auto s = std::make_unique<CommState>();
  s->comm = comm;
  s->rank = rank;
  s->nranks = 4;
  return s;
}

TEST(CommRegistryTest, FindsWhatWasRegisteredUntilRemoved) {
  CommRegistry reg(8);
  auto a = reg.Register(State(Fake(1), 2));
  ASSERT_TRUE(a.ok());
  auto b = reg.Register(State(Fake(2)));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(reg.Find(Fake(1)), *a);
  EXPECT_EQ(reg.Find(Fake(2)), *b);
  EXPECT_EQ(reg.Find(Fake(3)), nullptr);
  EXPECT_EQ(reg.Find(nullptr), nullptr);
  EXPECT_EQ((*a)->index, 1);
  EXPECT_EQ((*b)->index, 2);
  EXPECT_EQ(reg.first_rank(), 2);
  EXPECT_EQ(reg.live(), 2u);
  EXPECT_EQ(reg.Remove(Fake(1)), *a);
  EXPECT_FALSE((*a)->live.load());
  EXPECT_EQ(reg.Find(Fake(1)), nullptr);
  EXPECT_EQ(reg.Find(Fake(2)), *b);  // still found past the tombstone
  EXPECT_EQ(reg.Remove(Fake(1)), nullptr);
  EXPECT_EQ(reg.live(), 1u);
}

TEST(CommRegistryTest, AnAddressReusedByANewCommGetsANewState) {
  CommRegistry reg(8);
  auto a = reg.Register(State(Fake(7)));
  ASSERT_TRUE(a.ok());
  reg.Remove(Fake(7));
  auto b = reg.Register(State(Fake(7)));
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(reg.Find(Fake(7)), *b);
  int seen = 0;
  reg.ForEach([&](CommState&) { ++seen; });
  EXPECT_EQ(seen, 2);  // retired states stay for the summary
}

TEST(CommRegistryTest, AFullRegistryRefusesAndRecoversAfterRemoval) {
  CommRegistry reg(5);  // rounds up: at most 8 live
  int accepted = 0;
  for (uintptr_t i = 1; i <= 100; ++i) accepted += reg.Register(State(Fake(i))).ok();
  EXPECT_EQ(accepted, 8);
  EXPECT_FALSE(reg.Register(State(Fake(1000))).ok());
  reg.Remove(Fake(1));
  EXPECT_TRUE(reg.Register(State(Fake(1000))).ok());
  EXPECT_NE(reg.Find(Fake(1000)), nullptr);
}

TEST(CommRegistryTest, LookupsRaceSafelyWithRegistrationAndRemoval) {
  CommRegistry reg(64);
  auto stable = reg.Register(State(Fake(1)));
  ASSERT_TRUE(stable.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (reg.Find(Fake(1)) != *stable) wrong.fetch_add(1);
        CommState* s = reg.Find(Fake(500));
        if (s != nullptr && s->comm != Fake(500)) wrong.fetch_add(1);
      }
    });
  }
  for (int round = 0; round < 2000; ++round) {
    ASSERT_TRUE(reg.Register(State(Fake(500))).ok());
    for (uintptr_t i = 2; i < 10; ++i) ASSERT_TRUE(reg.Register(State(Fake(i))).ok());
    for (uintptr_t i = 2; i < 10; ++i) reg.Remove(Fake(i));
    reg.Remove(Fake(500));
  }
  stop.store(true);
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace trirace::interpose
