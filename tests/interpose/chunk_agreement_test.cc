// Chunk agreement (interpose/gate/chunk_agreement.h): every rank of a comm plans
// its chunks with rank 0's settings, whatever its own environment says,
// and the disagreement is named; the records travel through the wire form
// (topology/peer_identity.h), so the answer is computed here from decoded
// records, as the launcher does.
#include "interpose/gate/chunk_agreement.h"

#include <array>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/chunk_planner.h"

namespace trirace::interpose {
namespace {

using ::testing::HasSubstr;
using topo::ChunkSettings;
using topo::PeerIdentity;

constexpr ChunkSettings kDefaults{.fixed_bytes = 0, .wire_us = 4000, .min_bytes = 65536, .float_reductions = false};

// Ranks 0, 1 on h0 and 2, 3 on h1, each NIC at `gbps`, each with
// `settings`, after a trip through the wire form.
std::vector<PeerIdentity> Records(const std::vector<ChunkSettings>& settings, double gbps = 0.3) {
  std::vector<PeerIdentity> out;
  for (size_t r = 0; r < settings.size(); ++r) {
    const PeerIdentity id{.host = r < 2 ? "h0" : "h1", .nic = "eth0", .nic_gbps = gbps, .chunk = settings[r]};
    std::array<uint8_t, topo::kPeerIdentityBytes> buf{};
    topo::EncodePeerIdentity(id, buf);
    absl::StatusOr<PeerIdentity> back = topo::DecodePeerIdentity(buf);
    EXPECT_TRUE(back.ok()) << back.status();
    out.push_back(back.ok() ? *back : id);
  }
  return out;
}

TEST(ChunkAgreementTest, AlikeSettingsGiveTheWireTimeRuleAndNoComplaint) {
  const AgreedChunks a = AgreeChunks(Records({kDefaults, kDefaults, kDefaults, kDefaults}), 2);
  // 4 ms of 300 Mbit/s, in whole 4 KiB granules.
  EXPECT_EQ(a.bytes, sched::CommChunkBytes(0, 4000 * 1000, 65536, 2, 0.3e9 / 8));
  EXPECT_EQ(a.bytes, 147456u);
  EXPECT_FALSE(a.settings.float_reductions);
  EXPECT_EQ(a.differs, "");
  EXPECT_DOUBLE_EQ(a.slowest_gbps, 0.3);
}

// Each rank set another TRIRACE_CHUNK_US (a per-node wrapper, say): every
// rank gets rank 0's plan, and each variable is named when it is the one
// that differs.
TEST(ChunkAgreementTest, EveryRankPlansWithRankZerosSettings) {
  struct Case {
    ChunkSettings other;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{.fixed_bytes = 0, .wire_us = 2000, .min_bytes = 65536}, "rank 2 has TRIRACE_CHUNK_US=2000 where rank 0 has 4000"},
      {{.fixed_bytes = 8192, .wire_us = 4000, .min_bytes = 65536},
       "rank 2 has TRIRACE_CHUNK_BYTES=8192 where rank 0 has 0"},
      {{.fixed_bytes = 0, .wire_us = 4000, .min_bytes = 1 << 20},
       "rank 2 has TRIRACE_CHUNK_MIN_BYTES=1048576 where rank 0 has 65536"},
      {{.fixed_bytes = 0, .wire_us = 4000, .min_bytes = 65536, .float_reductions = true},
       "rank 2 has TRIRACE_CHUNK_FLOAT_REDUCTIONS=on where rank 0 has off"},
  };
  const AgreedChunks alike = AgreeChunks(Records({kDefaults, kDefaults, kDefaults, kDefaults}), 2);
  for (const Case& c : cases) {
    const AgreedChunks a = AgreeChunks(Records({kDefaults, kDefaults, c.other, c.other}), 2);
    EXPECT_EQ(a.bytes, alike.bytes) << c.says;
    EXPECT_EQ(a.settings.float_reductions, alike.settings.float_reductions) << c.says;
    EXPECT_EQ(a.settings, kDefaults) << c.says;
    EXPECT_EQ(a.differs, c.says);
    // With the other settings on rank 0, they are what every rank uses.
    const AgreedChunks b = AgreeChunks(Records({c.other, kDefaults, kDefaults, kDefaults}), 2);
    EXPECT_EQ(b.settings, c.other) << c.says;
    EXPECT_THAT(b.differs, HasSubstr("rank 1 has ")) << c.says;
  }
}

TEST(ChunkAgreementTest, RankZerosFixedSizeAndNeverSplitWin) {
  const ChunkSettings fixed{.fixed_bytes = 4096, .wire_us = 4000, .min_bytes = 65536};
  EXPECT_EQ(AgreeChunks(Records({fixed, kDefaults, kDefaults, kDefaults}), 2).bytes, 4096u);
  const ChunkSettings never{.fixed_bytes = 0, .wire_us = 0, .min_bytes = 65536};
  EXPECT_EQ(AgreeChunks(Records({never, kDefaults, kDefaults, kDefaults}), 2).bytes, 0u);
  EXPECT_GT(AgreeChunks(Records({kDefaults, never, never, never}), 2).bytes, 0u);
}

// The minimum travels in 4 KiB granules: a value between granules plans as
// the rule would with the exact value (it rounds to granules itself).
TEST(ChunkAgreementTest, AMinimumBetweenGranulesPlansAsTheExactValue) {
  const ChunkSettings odd{.fixed_bytes = 0, .wire_us = 1, .min_bytes = 70000};
  const AgreedChunks a = AgreeChunks(Records({odd, odd, odd, odd}), 2);
  EXPECT_EQ(a.bytes, sched::CommChunkBytes(0, 1000, 70000, 2, 0.3e9 / 8));
  EXPECT_EQ(a.bytes, 69632u);  // 17 granules
  EXPECT_EQ(a.differs, "");
}

TEST(ChunkAgreementTest, TheSlowestNicAndClassPriorityStillComeFromEveryRank) {
  std::vector<PeerIdentity> ranks = Records({kDefaults, kDefaults, kDefaults, kDefaults}, 10);
  ranks[3].nic_gbps = 1;
  EXPECT_EQ(AgreeChunks(ranks, 2).bytes, sched::CommChunkBytes(0, 4000 * 1000, 65536, 2, 1e9 / 8));
  for (PeerIdentity& id : ranks) id.class_priority = true;
  EXPECT_EQ(AgreeChunks(ranks, 2).bytes, 0u) << "every rank marks classes: no split across hosts";
  EXPECT_TRUE(AgreeChunks(ranks, 2).every_class_priority);
  ranks[1].class_priority = false;
  EXPECT_GT(AgreeChunks(ranks, 2).bytes, 0u);
  EXPECT_EQ(AgreeChunks({}, 0).bytes, 0u);
}

}  // namespace
}  // namespace trirace::interpose
