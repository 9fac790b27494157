// Rule [R14]: where a rank of a pipeline comm stands among the ranks that
// share its uplink (interpose/network/front_stage.h), and the process-wide answer.
#include "interpose/network/front_stage.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

std::vector<topo::PeerIdentity> Ranks(const std::vector<std::string>& hosts,
                                      const std::vector<std::string>& nics = {}) {
  std::vector<topo::PeerIdentity> out;
  for (size_t r = 0; r < hosts.size(); ++r) {
    topo::PeerIdentity id;
    id.host = hosts[r];
    if (r < nics.size()) id.nic = nics[r];
    out.push_back(id);
  }
  return out;
}

TEST(PlaceOnHostTest, TheLowestCommRankOfAHostIsItsFront) {
  // Megatron-LM's placement with two stages per node: stages 0, 1 on h0, 2, 3 on h1.
  const auto ranks = Ranks({"h0", "h0", "h1", "h1"});
  EXPECT_EQ(PlaceOnHost(ranks, 0), HostPlace::kFront);
  EXPECT_EQ(PlaceOnHost(ranks, 1), HostPlace::kBehind);
  EXPECT_EQ(PlaceOnHost(ranks, 2), HostPlace::kFront);
  EXPECT_EQ(PlaceOnHost(ranks, 3), HostPlace::kBehind);
}

TEST(PlaceOnHostTest, ARankAloneOnItsUplinkHasNothingToGoAheadOf) {
  const auto ranks = Ranks({"h0", "h1", "h2", "h0"});
  EXPECT_EQ(PlaceOnHost(ranks, 0), HostPlace::kFront);
  EXPECT_EQ(PlaceOnHost(ranks, 1), HostPlace::kAlone);
  EXPECT_EQ(PlaceOnHost(ranks, 2), HostPlace::kAlone);
  EXPECT_EQ(PlaceOnHost(ranks, 3), HostPlace::kBehind);
  EXPECT_EQ(PlaceOnHost(ranks, -1), HostPlace::kAlone);
  EXPECT_EQ(PlaceOnHost(ranks, 4), HostPlace::kAlone);
  EXPECT_EQ(PlaceOnHost({}, 0), HostPlace::kAlone);
}

TEST(PlaceOnHostTest, RanksOnDifferentRailsDoNotCompete) {
  // One host, two NICs: stages 0 and 2 on tb0, 1 and 3 on tb1.
  const auto ranks = Ranks({"h0", "h0", "h0", "h0"}, {"tb0", "tb1", "tb0", "tb1"});
  EXPECT_EQ(PlaceOnHost(ranks, 0), HostPlace::kFront);
  EXPECT_EQ(PlaceOnHost(ranks, 1), HostPlace::kFront);
  EXPECT_EQ(PlaceOnHost(ranks, 2), HostPlace::kBehind);
  EXPECT_EQ(PlaceOnHost(ranks, 3), HostPlace::kBehind);
  // A rank whose NIC is unknown shares the host's uplink with every rank.
  const auto unknown = Ranks({"h0", "h0"}, {"tb1", ""});
  EXPECT_EQ(PlaceOnHost(unknown, 1), HostPlace::kBehind);
}

TEST(DenseAheadTest, OnlyAProcessInFrontOfEveryPipelineGoesAhead) {
  ResetDenseAheadForTest();
  EXPECT_FALSE(DenseAhead());
  NoteDenseAhead(HostPlace::kAlone);
  EXPECT_FALSE(DenseAhead());
  NoteDenseAhead(HostPlace::kFront);
  EXPECT_TRUE(DenseAhead());
  NoteDenseAhead(HostPlace::kBehind);  // a second pipeline finds it behind
  EXPECT_FALSE(DenseAhead());
  NoteDenseAhead(HostPlace::kFront);
  EXPECT_FALSE(DenseAhead()) << "behind on one pipeline is behind";
  ResetDenseAheadForTest();
  EXPECT_EQ(HostPlaceName(HostPlace::kFront), "front");
}

}  // namespace
}  // namespace trirace::interpose
