// OpLinks: the links each op is charged, before and after its comm's peers
// are published, and their registration with the engine in id order.
#include "interpose/network/op_links.h"

#include <memory>
#include <string>
#include <vector>

#include "common/env_guard.h"
#include "common/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/comm/comm_state.h"
#include "scheduler/fifo_policy.h"

namespace trirace::interpose {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

std::vector<std::string> Names(const OpLinks& links, const std::vector<sched::LinkId>& ids) {
  std::vector<std::string> out;
  const std::vector<topo::Link> all = links.system_links().LinksFrom(0);
  for (sched::LinkId id : ids) out.push_back(all.at(id).name);
  return out;
}

class NoGates : public sched::GateOpener {
 public:
  void OpenGate(const sched::ReleasedTask&) override {}
};

class OpLinksTest : public ::testing::Test {
 protected:
  OpLinksTest()
      : links_(topo::HostNicSystem("a", "eth0", 100),
               topo::LocalNic{.host_key = "a", .interface = "eth0", .gbps = 100}),
        engine_(std::make_unique<sched::FifoPolicy>(), &gates_, {.start_thread = false}) {
    links_.Register(engine_);
    state_.rank = 0;
    state_.nranks = 3;
  }

  std::vector<std::string> Names(const std::vector<sched::LinkId>& ids) const { return interpose::Names(links_, ids); }

  OpLinks links_;
  NoGates gates_;
  sched::Engine engine_;
  CommState state_;
};

TEST_F(OpLinksTest, BeforeThePeersAreKnownEveryOpIsChargedThisHostsNic) {
  EXPECT_THAT(Names(links_.For(&state_, NcclFunc::kAllReduce, -1)), ElementsAre("nic-tx:a/eth0", "nic-rx:a/eth0"));
  EXPECT_THAT(Names(links_.For(&state_, NcclFunc::kSend, 1)), ElementsAre("nic-tx:a/eth0", "nic-rx:a/eth0"));
  EXPECT_THAT(Names(links_.For(nullptr, NcclFunc::kRecv, 1)), ElementsAre("nic-tx:a/eth0", "nic-rx:a/eth0"));
  using Device = std::pair<std::string, sched::LinkId>;
  EXPECT_THAT(links_.OccupancyDevices(), ElementsAre(Device("eth0", 0), Device("eth0", 1)));
}

TEST_F(OpLinksTest, PublishedPeersGiveEachOpItsPathAndNewLinksReachTheEngine) {
  const topo::PeerIdentity me = links_.LocalIdentity("");
  const topo::PeerIdentity same_host = me;
  const topo::PeerIdentity other{.host = "b", .gpu_pci = "", .nic = "eth1", .rail = 0, .nic_gbps = 25};
  const CommPeers* p = links_.Publish(state_, 0, {me, same_host, other}, engine_);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(state_.peers.load(), p);
  EXPECT_EQ(p->hosts, 2);
  EXPECT_THAT(Names(links_.For(&state_, NcclFunc::kSend, 2)), ElementsAre("nic-tx:a/eth0", "nic-rx:b/eth1"));
  EXPECT_THAT(Names(links_.For(&state_, NcclFunc::kRecv, 2)), ElementsAre("nic-tx:b/eth1", "nic-rx:a/eth0"));
  EXPECT_THAT(Names(links_.For(&state_, NcclFunc::kSend, 1)), ElementsAre("shm:a"));
  EXPECT_THAT(Names(links_.For(&state_, NcclFunc::kAllGather, -1)),
              UnorderedElementsAre("shm:a", "nic-tx:a/eth0", "nic-rx:b/eth1", "nic-tx:b/eth1", "nic-rx:a/eth0"));
  // A peer out of range keeps the local NIC.
  EXPECT_THAT(Names(links_.For(&state_, NcclFunc::kSend, 7)), ElementsAre("nic-tx:a/eth0", "nic-rx:a/eth0"));
  // Every link the topology has now is registered with the engine, in id order.
  EXPECT_EQ(engine_.AddLink({.name = "probe"}), links_.system_links().size());
  // A second publication is ignored.
  EXPECT_EQ(links_.Publish(state_, 0, {me, me, me}, engine_), p);
}

std::vector<std::string>* g_warnings = nullptr;
void Sink(void*, LogLevel level, Subsys, const char*, int, absl::string_view msg) {
  if (level == LogLevel::kWARN && g_warnings != nullptr) g_warnings->emplace_back(msg);
}

// OpLinks::FromParams under `env`; the WARN lines it logged go to `warnings`.
std::unique_ptr<OpLinks> FromParams(EnvGuard& env, std::vector<std::string>* warnings) {
  env.Apply();
  g_warnings = warnings;
  log::SetSink(Sink, nullptr);
  std::unique_ptr<OpLinks> links = OpLinks::FromParams();
  log::SetSink(nullptr, nullptr);
  g_warnings = nullptr;
  return links;
}

TEST(OpLinksFromParamsTest, ATopologyFileNamesTheNicsAndABadOneFallsBackToOneNicPerHost) {
  const std::string spec = std::string(TRIRACE_TOPO_TEST_DATA) + "/two_hosts_2rail.json";
  EnvGuard env;
  env.Set("TRIRACE_TOPO_FILE", spec).Set("TRIRACE_HOST_ID", "node1").Set("TRIRACE_NIC", "tb0")
      .Set("TRIRACE_NIC_GBPS", "10");
  std::vector<std::string> warnings;
  std::unique_ptr<OpLinks> links = FromParams(env, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], ::testing::HasSubstr("TRIRACE_NIC=tb0 is not a NIC of host \"node1\""));
  const std::vector<topo::Link> all = links->system_links().LinksFrom(0);
  std::vector<std::string> measured;
  for (const auto& [device, id] : links->OccupancyDevices()) {
    EXPECT_EQ(device, "tb0");
    measured.push_back(all.at(id).name);
  }
  EXPECT_THAT(measured, ElementsAre("nic-tx:node1/mlx5_0", "nic-rx:node1/mlx5_0")) << "rail 0 of this host";
  EXPECT_EQ(links->system_links().system().hosts.size(), 2u);

  warnings.clear();
  env.Set("TRIRACE_TOPO_FILE", "/nonexistent/topo.json");
  links = FromParams(env, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], ::testing::HasSubstr("TRIRACE_TOPO_FILE=/nonexistent/topo.json: /nonexistent/topo.json: "
                                                "no such file; using one NIC per host (tb0, 10 Gbit/s)"));
  EXPECT_THAT(Names(*links, links->local()), ElementsAre("nic-tx:node1/tb0", "nic-rx:node1/tb0"));
}

}  // namespace
}  // namespace trirace::interpose

namespace trirace::interpose {
namespace {

// The NVLink monitor's devices: one per local GPU the model gives NVLinks,
// each measuring that GPU's nvl-tx and nvl-rx links.
TEST(OpLinksNvlinkTest, EachGpuWithNvlinksIsAMonitorDeviceOnItsNvlinkLinks) {
  topo::System sys = topo::HostNicSystem("a", "eth0", 100);
  for (const char* pci : {"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0"}) {
    topo::Gpu g;
    g.pci = pci;
    if (std::string(pci) != "0000:47:00.0") {
      g.nvlinks.push_back({std::string(pci) == "0000:07:00.0" ? "0000:0f:00.0" : "0000:07:00.0", 2});
      g.nvlink_gbps = 25;
    }
    sys.hosts[0].gpus.push_back(g);
  }
  OpLinks links(sys, topo::LocalNic{.host_key = "a", .interface = "eth0", .gbps = 100});
  EXPECT_THAT(links.NvlinkGpus(), ElementsAre("0000:07:00.0", "0000:0f:00.0"));
  std::vector<std::string> seen;
  for (const auto& [device, id] : links.NvlinkOccupancyDevices()) {
    seen.push_back(device + " -> " + Names(links, {id}).front());
  }
  EXPECT_THAT(seen, ElementsAre("nvlink:0000:07:00.0 -> nvl-tx:a/0000:07:00.0",
                                "nvlink:0000:07:00.0 -> nvl-rx:a/0000:07:00.0",
                                "nvlink:0000:0f:00.0 -> nvl-tx:a/0000:0f:00.0",
                                "nvlink:0000:0f:00.0 -> nvl-rx:a/0000:0f:00.0"));
  // Without a topology there is no GPU, so nothing for the monitor.
  OpLinks plain(topo::HostNicSystem("a", "eth0", 100), topo::LocalNic{.host_key = "a", .interface = "eth0"});
  EXPECT_TRUE(plain.NvlinkGpus().empty());
  EXPECT_TRUE(plain.NvlinkOccupancyDevices().empty());
}

}  // namespace
}  // namespace trirace::interpose
