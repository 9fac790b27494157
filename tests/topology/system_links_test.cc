// PeerIdentity records and SystemLinks: ranks placed on hosts, GPUs and
// NICs from their identities, link ids that never change as hosts are
// added, and the host-NIC model used without a topology.
#include "topology/system_links.h"

#include <array>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topo_builders.h"

namespace trirace::topo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::array<uint8_t, kPeerIdentityBytes> Encode(const PeerIdentity& id) {
  std::array<uint8_t, kPeerIdentityBytes> buf;
  buf.fill(0xAB);
  EncodePeerIdentity(id, buf);
  return buf;
}

TEST(PeerIdentityTest, RoundTripsEveryField) {
  const PeerIdentity id{.host = "node7", .gpu_pci = "0000:3b:00.0", .nic = "mlx5_3", .rail = 3, .nic_gbps = 400,
                        .class_priority = true,
                        .chunk = {.fixed_bytes = uint64_t{3} << 40, .wire_us = 10000000, .min_bytes = 1 << 20,
                                  .float_reductions = true}};
  const auto buf = Encode(id);
  absl::StatusOr<PeerIdentity> back = DecodePeerIdentity(buf);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, id);

  // NIC names up to 31 bytes survive; a longer one is cut there.
  PeerIdentity named{.host = "h", .nic = std::string(31, 'n')};
  back = DecodePeerIdentity(Encode(named));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->nic, std::string(31, 'n'));
  named.nic += "z";
  EXPECT_EQ(DecodePeerIdentity(Encode(named))->nic, std::string(31, 'n'));

  const PeerIdentity cpu{.host = "h", .gpu_pci = "", .nic = "", .rail = -1, .nic_gbps = 0};
  back = DecodePeerIdentity(Encode(cpu));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, cpu);
}

TEST(PeerIdentityTest, LongHostKeysStayDistinctAndStable) {
  const std::string a = std::string(70, 'x') + "-a";
  const std::string b = std::string(70, 'x') + "-b";
  absl::StatusOr<PeerIdentity> da = DecodePeerIdentity(Encode({.host = a}));
  absl::StatusOr<PeerIdentity> db = DecodePeerIdentity(Encode({.host = b}));
  ASSERT_TRUE(da.ok() && db.ok());
  EXPECT_NE(da->host, db->host);
  EXPECT_EQ(da->host, WireHostKey(a));
  EXPECT_LT(da->host.size(), 64u);
  EXPECT_EQ(WireHostKey("short"), "short");
}

TEST(PeerIdentityTest, RejectsRecordsThatWereNeverWritten) {
  std::array<uint8_t, kPeerIdentityBytes> zero{};
  EXPECT_THAT(DecodePeerIdentity(zero).status().message(), HasSubstr("magic"));
  auto buf = Encode({.host = "n"});
  buf[4] = 9;  // version
  EXPECT_THAT(DecodePeerIdentity(buf).status().message(), HasSubstr("version 9"));
  buf = Encode({.host = "n"});
  buf[4] = 1;  // the version without flags, whose bus id field was longer
  EXPECT_THAT(DecodePeerIdentity(buf).status().message(), HasSubstr("version 1"));
  buf[4] = 2;  // the 128-byte version without chunk settings
  EXPECT_THAT(DecodePeerIdentity(buf).status().message(), HasSubstr("version 2"));
  buf = Encode({.host = "n"});
  std::fill(buf.begin() + 12, buf.begin() + 76, 'z');  // host without its NUL
  EXPECT_THAT(DecodePeerIdentity(buf).status().message(), HasSubstr("unterminated"));
}

std::vector<std::string> Names(const SystemLinks& links, const std::vector<int>& ids) {
  std::vector<std::string> out;
  const std::vector<Link> all = links.LinksFrom(0);
  for (int id : ids) out.push_back(all.at(id).name);
  return out;
}

TEST(SystemLinksTest, RanksOnRailsUseTheirOwnNicAndNvLinkInsideAHost) {
  SystemLinks links(testing::TwoDgxHosts(), "node0");
  std::vector<PeerIdentity> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(links.LocalIdentity(testing::Bus(0x11 + 0x10 * i), ""));
  // node1's ranks: the same GPUs, another host.
  for (int i = 0; i < 8; ++i) {
    PeerIdentity p = ids[i];
    p.host = "node1";
    ids.push_back(p);
  }
  ASSERT_EQ(ids.size(), 16u);
  EXPECT_EQ(ids[3].nic, "mlx5_3");
  EXPECT_EQ(ids[3].rail, 3);
  const size_t before = links.size();
  const std::vector<Endpoint> ep = links.Place(ids);
  EXPECT_EQ(links.size(), before) << "both hosts were in the system: no new link";
  EXPECT_EQ(ep[11].host, 1);
  EXPECT_EQ(ep[11].gpu, 3);

  EXPECT_THAT(Names(links, links.P2P(ep[3], ep[11])), ElementsAre("nic-tx:node0/mlx5_3", "nic-rx:node1/mlx5_3"));
  EXPECT_THAT(Names(links, links.P2P(ep[0], ep[11])),
              ElementsAre("nic-tx:node0/mlx5_0", "spine-up:leaf0", "spine-down:leaf3", "nic-rx:node1/mlx5_3"));
  EXPECT_THAT(Names(links, links.P2P(ep[1], ep[2])),
              ElementsAre("nvl-tx:node0/0000:21:00.0", "nvl-rx:node0/0000:31:00.0"));
  // A ring over one host's GPUs stays on NVLink.
  for (const std::string& name : Names(links, links.Ring(std::span(ep).first(8)))) {
    EXPECT_THAT(name, HasSubstr("nvl-")) << name;
  }
}

TEST(SystemLinksTest, UnknownHostsAreCopiesOfTheLocalOneAndIdsNeverMove) {
  System one = testing::TwoDgxHosts();
  one.hosts.pop_back();
  SystemLinks links(one, "node0");
  const std::vector<Link> first = links.LinksFrom(0);
  PeerIdentity me = links.LocalIdentity(testing::Bus(0x51), "");
  PeerIdentity peer = me;
  peer.host = "node9";
  const std::vector<Endpoint> ep = links.Place(std::vector<PeerIdentity>{me, peer});
  ASSERT_EQ(ep.size(), 2u);
  EXPECT_EQ(ep[1].host, 1);
  EXPECT_EQ(ep[1].gpu, 4) << "the copy has the local host's GPUs";
  const std::vector<Link> after = links.LinksFrom(0);
  ASSERT_GT(after.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(after[i].name, first[i].name) << i;
  EXPECT_THAT(Names(links, links.P2P(ep[0], ep[1])), ElementsAre("nic-tx:node0/mlx5_4", "nic-rx:node9/mlx5_4"));
  EXPECT_EQ(links.system().hosts[1].key, "node9");
}

TEST(SystemLinksTest, HostNicModelChargesBothEndsAndKeepsOneHostInMemory) {
  SystemLinks links(HostNicSystem("a", "eth0", 25), "a");
  const PeerIdentity me = links.LocalIdentity("", "eth0");
  EXPECT_EQ(me.nic, "eth0");
  EXPECT_EQ(me.nic_gbps, 25);
  const PeerIdentity b{.host = "b", .nic = "ens5", .rail = 0, .nic_gbps = 100};
  const std::vector<Endpoint> ep = links.Place(std::vector<PeerIdentity>{me, me, b});
  EXPECT_THAT(Names(links, links.P2P(ep[0], ep[2])), ElementsAre("nic-tx:a/eth0", "nic-rx:b/ens5"));
  EXPECT_THAT(Names(links, links.P2P(ep[2], ep[1])), ElementsAre("nic-tx:b/ens5", "nic-rx:a/eth0"));
  EXPECT_THAT(Names(links, links.P2P(ep[0], ep[1])), ElementsAre("shm:a"));
  const std::vector<Link> all = links.LinksFrom(0);
  EXPECT_EQ(all.at(links.Find("nic-rx:b/ens5")).gbps, 100) << "a peer's NIC rate comes from its record";
  EXPECT_THAT(Names(links, links.LocalNicLinks("eth0")), ElementsAre("nic-tx:a/eth0", "nic-rx:a/eth0"));
  EXPECT_THAT(links.LocalNicLinks("eth9"), IsEmpty());
  EXPECT_THAT(Names(links, links.Ring(ep)),
              UnorderedElementsAre("shm:a", "nic-tx:a/eth0", "nic-rx:b/ens5", "nic-tx:b/ens5", "nic-rx:a/eth0"));
}

TEST(SystemLinksTest, ALocalHostMissingFromTheFileIsAddedEmpty) {
  SystemLinks links(testing::TwoDgxHosts(), "elsewhere");
  const PeerIdentity me = links.LocalIdentity("", "");
  EXPECT_EQ(me.host, "elsewhere");
  EXPECT_EQ(me.nic, "");
  EXPECT_EQ(links.system().hosts.size(), 3u);
}

}  // namespace
}  // namespace trirace::topo
