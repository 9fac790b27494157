#include "scheduler/chunk_planner.h"

#include <gtest/gtest.h>

#include <tuple>

namespace trirace::sched {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(ChunkPlannerTest, SmallOrUnsplittableOpsAreOneChunk) {
  EXPECT_EQ(PlanChunks(NcclFunc::kAllReduce, 1024, 4, 4 * kMiB).chunks, (std::vector<Chunk>{{0, 1024}}));
  EXPECT_EQ(PlanChunks(NcclFunc::kAllReduce, kMiB, 4, 4 * kMiB).chunks.size(), 1u) << "exactly chunk_bytes";
  EXPECT_EQ(PlanChunks(NcclFunc::kAllReduce, 64 * kMiB, 4, 0).chunks.size(), 1u) << "0 disables";
  for (NcclFunc f : {NcclFunc::kReduceScatter, NcclFunc::kAllGather, NcclFunc::kAlltoAll, NcclFunc::kGather,
                     NcclFunc::kScatter, NcclFunc::kSend, NcclFunc::kRecv}) {
    EXPECT_EQ(PlanChunks(f, 64 * kMiB, 4, kMiB).chunks, (std::vector<Chunk>{{0, 64 * kMiB}})) << NcclFuncName(f);
  }
  EXPECT_EQ(PlanChunks(NcclFunc::kAllReduce, 0, 4, kMiB).chunks, (std::vector<Chunk>{{0, 0}}));
}

TEST(ChunkPlannerTest, SplitsAllReduceReduceAndBothBroadcasts) {
  for (NcclFunc f : {NcclFunc::kAllReduce, NcclFunc::kReduce, NcclFunc::kBroadcast, NcclFunc::kBcast}) {
    const ChunkPlan plan = PlanChunks(f, 10 * kMiB / 4, 4, 4 * kMiB);  // 10 MiB of floats
    ASSERT_EQ(plan.chunks.size(), 3u) << NcclFuncName(f);
    EXPECT_EQ(plan.chunks[0], (Chunk{0, kMiB}));
    EXPECT_EQ(plan.chunks[1], (Chunk{kMiB, kMiB}));
    EXPECT_EQ(plan.chunks[2], (Chunk{2 * kMiB, kMiB / 2}));
  }
}

TEST(ChunkPlannerTest, NeverMoreThanTheMaximumChunks) {
  const ChunkPlan plan = PlanChunks(NcclFunc::kAllReduce, uint64_t{1} << 34, 2, 4096);
  EXPECT_LE(plan.chunks.size(), kMaxChunksPerOp);
  EXPECT_GT(plan.chunks.size(), kMaxChunksPerOp / 2);
}

TEST(ChunkPlannerTest, HugeCountDoesNotOverflow) {
  const uint64_t count = ~uint64_t{0} / 2;
  const ChunkPlan plan = PlanChunks(NcclFunc::kAllReduce, count, 8, 4 * kMiB);
  uint64_t covered = 0;
  for (const Chunk& c : plan.chunks) covered += c.count;
  EXPECT_EQ(covered, count);
  EXPECT_LE(plan.chunks.size(), kMaxChunksPerOp);
}

// Sweep over (func, count, dtype size, chunk bytes).
class ChunkPlanSweep
    : public ::testing::TestWithParam<std::tuple<NcclFunc, uint64_t, size_t, uint64_t>> {};

TEST_P(ChunkPlanSweep, CoversTheBufferExactlyAlignedAndDeterministically) {
  const auto [func, count, dtype, chunk_bytes] = GetParam();
  const ChunkPlan plan = PlanChunks(func, count, dtype, chunk_bytes);
  EXPECT_EQ(plan, PlanChunks(func, count, dtype, chunk_bytes)) << "same inputs, same plan";
  ASSERT_FALSE(plan.chunks.empty());
  EXPECT_LE(plan.chunks.size(), kMaxChunksPerOp);
  uint64_t next = 0;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const Chunk& c = plan.chunks[i];
    EXPECT_EQ(c.offset, next) << "chunk " << i << " leaves a gap or overlaps";
    // Offsets are in elements: the byte offset is a multiple of the dtype size.
    EXPECT_EQ((c.offset * dtype) % dtype, 0u);
    if (plan.split()) {
      EXPECT_GT(c.count, 0u);
      if (i + 1 < plan.chunks.size()) {
        EXPECT_EQ(c.count, plan.chunks[0].count) << "all but the last chunk have one length";
        if (kChunkGranuleBytes % dtype == 0) {
          EXPECT_EQ((c.count * dtype) % kChunkGranuleBytes, 0u);
        }
      }
    }
    next = c.offset + c.count;
  }
  EXPECT_EQ(next, count);
  const bool splittable = IsChunkable(func) && chunk_bytes != 0 && count * dtype > chunk_bytes;
  EXPECT_EQ(plan.split(), splittable);
}

INSTANTIATE_TEST_SUITE_P(
    Grid, ChunkPlanSweep,
    ::testing::Combine(::testing::Values(NcclFunc::kAllReduce, NcclFunc::kBroadcast, NcclFunc::kAllGather),
                       ::testing::Values(uint64_t{1000}, uint64_t{262144}, uint64_t{1000003}, uint64_t{50000017}),
                       ::testing::Values(size_t{1}, size_t{2}, size_t{3}, size_t{8}),
                       ::testing::Values(uint64_t{0}, uint64_t{4096}, uint64_t{1000000}, uint64_t{4 * kMiB})));

}  // namespace
}  // namespace trirace::sched
