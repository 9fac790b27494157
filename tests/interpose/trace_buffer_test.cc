#include "interpose/trace/trace_buffer.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

TraceRecord Rec(uint64_t seq, int comm = 1) {
  TraceRecord r;
  r.seq = seq;
  r.comm_index = comm;
  return r;
}

TEST(TraceBufferTest, KeepsOrderAndCountsWhatDoesNotFit) {
  auto buf = TraceBuffer::Create(0);  // the minimum: 16 records
  ASSERT_TRUE(buf.ok());
  TraceBuffer& b = **buf;
  ASSERT_EQ(b.capacity(), 16u);
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(b.Push(Rec(i)), i < 16);
  EXPECT_EQ(b.dropped(), 4u);
  EXPECT_EQ(b.size(), 16u);
  TraceRecord r;
  for (uint64_t i = 0; i < 16; ++i) {
    ASSERT_TRUE(b.Pop(&r));
    EXPECT_EQ(r.seq, i);
  }
  EXPECT_FALSE(b.Pop(&r));
  EXPECT_TRUE(b.Push(Rec(99)));  // room again
  ASSERT_TRUE(b.Pop(&r));
  EXPECT_EQ(r.seq, 99u);
}

TEST(TraceBufferTest, CapacityFollowsTheMemoryBound) {
  auto buf = TraceBuffer::Create(1 << 20);
  ASSERT_TRUE(buf.ok());
  EXPECT_LE((*buf)->capacity() * sizeof(TraceRecord), size_t{1} << 20);
  EXPECT_GE((*buf)->capacity() * 2 * (sizeof(TraceRecord) + 8), size_t{1} << 20);
}

TEST(TraceBufferTest, ConcurrentProducersLoseNothingUncounted) {
  auto buf = TraceBuffer::Create(64 * 1024);
  ASSERT_TRUE(buf.ok());
  TraceBuffer& b = **buf;
  constexpr int kProducers = 3, kEach = 20000;
  std::atomic<bool> done{false};
  std::vector<std::set<uint64_t>> seen(kProducers + 1);
  uint64_t popped = 0;
  std::thread consumer([&] {
    TraceRecord r;
    for (;;) {
      const bool finished = done.load();
      while (b.Pop(&r)) {
        // Per producer, records come out in the order they went in.
        auto& s = seen[r.comm_index];
        if (!s.empty()) {
          EXPECT_GT(r.seq, *s.rbegin());
        }
        s.insert(r.seq);
        ++popped;
      }
      if (finished) break;
    }
  });
  std::vector<std::thread> producers;
  for (int p = 1; p <= kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint64_t i = 0; i < kEach; ++i) b.Push(Rec(i, p));
    });
  }
  for (auto& t : producers) t.join();
  done.store(true);
  consumer.join();
  EXPECT_EQ(popped + b.dropped(), static_cast<uint64_t>(kProducers) * kEach);
  EXPECT_EQ(b.pushed(), popped);
}

}  // namespace
}  // namespace trirace::interpose
