#include "topology/paths.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/topology/topo_builders.h"
#include "topology/affinity.h"

namespace trirace::topo {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using testing::PcieServer;

// Two (or more) identical PCIe servers (4 rails, 2 GPUs per rail).
System Servers(int n, Fabric fabric = {}) {
  System s;
  for (int i = 0; i < n; ++i) s.hosts.push_back(PcieServer("node" + std::to_string(i)));
  for (Host& h : s.hosts) AssignNics(h);
  s.fabric = fabric;
  return s;
}

std::vector<std::string> Names(const PathResolver& r, const std::vector<int>& ids) {
  std::vector<std::string> out;
  for (int id : ids) out.push_back(r.links().at(id).name);
  return out;
}

TEST(PathResolverTest, AcrossHostsASendCrossesItsNicAndThePeersNic) {
  const System s = Servers(2);
  PathResolver r(s);
  EXPECT_THAT(Names(r, r.P2P({0, 3}, {1, 3})), ElementsAre("nic-tx:node0/mlx5_1", "nic-rx:node1/mlx5_1"));
  EXPECT_THAT(Names(r, r.P2P({1, 6}, {0, 0})), ElementsAre("nic-tx:node1/mlx5_3", "nic-rx:node0/mlx5_0"));
  EXPECT_EQ(r.links().at(r.Find("nic-tx:node0/mlx5_1")).gbps, 200);
}

TEST(PathResolverTest, WithinAHostTrafficNeverTouchesANic) {
  const System s = Servers(1);
  PathResolver r(s);
  const auto& busid = [&](int gpu) { return s.hosts[0].gpus[gpu].pci; };
  const auto& sw = [&](int i) { return s.hosts[0].pci[i].busid; };
  EXPECT_THAT(r.P2P({0, 2}, {0, 2}), IsEmpty()) << "same GPU";
  EXPECT_THAT(Names(r, r.P2P({0, 0}, {0, 1})),
              ElementsAre("pcie-up:node0/" + busid(0), "pcie-down:node0/" + busid(1)))
      << "two GPUs under one switch";
  EXPECT_THAT(Names(r, r.P2P({0, 0}, {0, 2})),
              ElementsAre("pcie-up:node0/" + busid(0), "pcie-up:node0/" + sw(0), "pcie-down:node0/" + sw(1),
                          "pcie-down:node0/" + busid(2)))
      << "two switches of one socket";
  const std::vector<std::string> across = Names(r, r.P2P({0, 0}, {0, 7}));
  EXPECT_NE(std::find(across.begin(), across.end(), "shm:node0"), across.end()) << "across sockets";
  for (const std::string& l : across) EXPECT_EQ(l.rfind("nic-", 0), std::string::npos) << l;
}

TEST(PathResolverTest, NvSwitchPeersUseNvLinkOnly) {
  System s = Servers(1);
  for (Gpu& g : s.hosts[0].gpus) {
    g.nvlinks = {{"nvswitch", 18}};
    g.nvlink_gbps = 200;
  }
  PathResolver r(s);
  const std::string a = s.hosts[0].gpus[0].pci, b = s.hosts[0].gpus[7].pci;
  EXPECT_THAT(Names(r, r.P2P({0, 0}, {0, 7})), ElementsAre("nvl-tx:node0/" + a, "nvl-rx:node0/" + b));
  EXPECT_EQ(r.links().at(r.Find("nvl-tx:node0/" + a)).gbps, 18 * 200);
}

TEST(PathResolverTest, RailOptimisedFabricCrossesTheSpineOnlyBetweenRails) {
  const System s = Servers(2, {.kind = Fabric::Kind::kRailOptimized});
  PathResolver r(s);
  EXPECT_THAT(Names(r, r.P2P({0, 0}, {1, 1})), ElementsAre("nic-tx:node0/mlx5_0", "nic-rx:node1/mlx5_0"))
      << "rail 0 to rail 0: one leaf";
  EXPECT_THAT(Names(r, r.P2P({0, 0}, {1, 2})),
              ElementsAre("nic-tx:node0/mlx5_0", "spine-up:leaf0", "spine-down:leaf1", "nic-rx:node1/mlx5_1"));
}

TEST(PathResolverTest, TwoTierFabricCrossesTheSpineBetweenLeaves) {
  const System s = Servers(4, {.kind = Fabric::Kind::kTwoTier, .hosts_per_leaf = 2, .oversubscription = 2});
  PathResolver r(s);
  EXPECT_THAT(Names(r, r.P2P({0, 0}, {1, 0})), ElementsAre("nic-tx:node0/mlx5_0", "nic-rx:node1/mlx5_0"));
  EXPECT_THAT(Names(r, r.P2P({1, 0}, {2, 0})),
              ElementsAre("nic-tx:node1/mlx5_0", "spine-up:leaf0", "spine-down:leaf1", "nic-rx:node2/mlx5_0"));
}

// The example: a data-parallel all-reduce on rail 0 and pipeline
// traffic on rail 3 share no link; two ops through one NIC do.
TEST(PathResolverTest, OpsOnDifferentRailsShareNoLinkAndOpsOnOneNicDo) {
  const System s = Servers(4);
  PathResolver r(s);
  std::vector<Endpoint> dp;  // GPU 0 of every host
  for (int h = 0; h < 4; ++h) dp.push_back({h, 0});
  const std::vector<int> allreduce = r.Ring(dp);
  const std::vector<int> pipeline = r.P2P({0, 6}, {1, 6});
  const std::vector<int> same_nic = r.P2P({0, 1}, {2, 1});
  std::set<int> ar(allreduce.begin(), allreduce.end());
  for (int l : pipeline) EXPECT_EQ(ar.count(l), 0u) << r.links()[l].name;
  bool shared = false;
  for (int l : same_nic) shared = shared || ar.count(l) > 0;
  EXPECT_TRUE(shared) << "GPU 1 sends through GPU 0's NIC";
  EXPECT_THAT(Names(r, allreduce),
              UnorderedElementsAre("nic-tx:node0/mlx5_0", "nic-rx:node0/mlx5_0", "nic-tx:node1/mlx5_0",
                                   "nic-rx:node1/mlx5_0", "nic-tx:node2/mlx5_0", "nic-rx:node2/mlx5_0",
                                   "nic-tx:node3/mlx5_0", "nic-rx:node3/mlx5_0"));
}

TEST(PathResolverTest, ARingWithinOneHostStaysOffTheNics) {
  const System s = Servers(2);
  PathResolver r(s);
  const std::vector<Endpoint> ranks = {{0, 0}, {0, 1}};
  for (const std::string& l : Names(r, r.Ring(ranks))) EXPECT_EQ(l.rfind("nic-", 0), std::string::npos) << l;
  EXPECT_THAT(r.Ring(std::vector<Endpoint>{{0, 0}}), IsEmpty()) << "one rank: no traffic";
}

TEST(PathResolverTest, ProcessesWithoutAGpuUseRailZeroOrTheirNic) {
  const System s = Servers(2);
  PathResolver r(s);
  EXPECT_THAT(Names(r, r.P2P({0}, {1})), ElementsAre("nic-tx:node0/mlx5_0", "nic-rx:node1/mlx5_0"));
  const int nic2 = s.hosts[0].FindNic("mlx5_2"), nic3 = s.hosts[1].FindNic("mlx5_3");
  EXPECT_THAT(Names(r, r.P2P({0, -1, nic2}, {1, -1, nic3})),
              ElementsAre("nic-tx:node0/mlx5_2", "nic-rx:node1/mlx5_3"));
  EXPECT_THAT(r.P2P({0, 0}, {5, 0}), IsEmpty()) << "an unknown host: no links, no crash";
  EXPECT_EQ(r.Find("nic-tx:nowhere/x"), -1);
}

}  // namespace
}  // namespace trirace::topo
