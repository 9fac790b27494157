// The trirace policy on the links the topology gives: ops that share no
// link do not hold each other back. The engine registers SystemLinks' links
// in id order (as the shim does) and the tasks carry resolved link ids.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/engine.h"
#include "scheduler/trirace_policy.h"
#include "topo_builders.h"
#include "topology/system_links.h"

namespace trirace::topo {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class Opener : public sched::GateOpener {
 public:
  void OpenGate(const sched::ReleasedTask& t) override { opened.push_back(t); }
  const sched::ReleasedTask* Find(sched::TaskId id) const {
    for (const sched::ReleasedTask& t : opened) {
      if (t.id == id) return &t;
    }
    return nullptr;
  }
  std::vector<sched::ReleasedTask> opened;
};

class TopologySchedulingTest : public ::testing::Test {
 protected:
  TopologySchedulingTest() : links_(testing::TwoDgxHosts(), "node0") {
    sched::TriracePolicyConfig config;
    config.dense_window_bytes = 64 * kMiB;
    config.dense_credit_bytes = 0;  // no credit: higher-class traffic on a link holds DENSE there
    config.dense_credit_ns = 0;
    config.max_hold_ns = 1'000'000'000;
    sched::EngineOptions options;
    options.start_thread = false;
    options.max_hold_ns = 1'000'000'000;
    engine_ = std::make_unique<sched::Engine>(std::make_unique<sched::TriracePolicy>(config), &opener_, options);
    for (const Link& l : links_.LinksFrom(0)) {
      engine_->AddLink({.name = l.name, .capacity_bytes_per_s = l.gbps * 1e9 / 8});
    }
    for (const char* host : {"node0", "node1"}) {
      for (int i = 0; i < 8; ++i) {
        PeerIdentity id = links_.LocalIdentity(testing::Bus(0x11 + 0x10 * i), "");
        id.host = host;
        ids_.push_back(id);
      }
    }
    ep_ = links_.Place(ids_);
  }

  static std::vector<sched::LinkId> Ids(const std::vector<int>& v) { return {v.begin(), v.end()}; }

  sched::TaskId Submit(TrafficClass c, const std::vector<int>& links, bool gated, sched::CommId comm) {
    return engine_->Submit({.comm = comm, .traffic_class = c, .bytes = 8 * kMiB, .links = Ids(links), .gated = gated});
  }

  SystemLinks links_;
  Opener opener_;
  std::unique_ptr<sched::Engine> engine_;
  std::vector<PeerIdentity> ids_;
  std::vector<Endpoint> ep_;
};

TEST_F(TopologySchedulingTest, DenseOnRailZeroIsNotHeldByP2POnRailThree) {
  // Pipeline send node0 GPU 3 -> node1 GPU 3: rail 3, running.
  Submit(TrafficClass::kP2P, links_.P2P(ep_[3], ep_[11]), /*gated=*/false, 1);
  // Data-parallel all-reduce of the GPU 0s of both hosts: rail 0 only.
  const std::vector<int> rail0 = links_.Ring(std::vector<Endpoint>{ep_[0], ep_[8]});
  const sched::TaskId dense = Submit(TrafficClass::kDense, rail0, true, 2);
  const sched::ReleasedTask* r = opener_.Find(dense);
  ASSERT_NE(r, nullptr) << "DENSE on rail 0 was held by P2P on rail 3";
  EXPECT_EQ(r->reason, sched::ReleaseReason::kDenseGap);

  // The same all-reduce on rail 3 (the GPU 3s) shares the P2P's NICs: held.
  const std::vector<int> rail3 = links_.Ring(std::vector<Endpoint>{ep_[3], ep_[11]});
  const sched::TaskId held = Submit(TrafficClass::kDense, rail3, true, 3);
  EXPECT_EQ(opener_.Find(held), nullptr) << "DENSE on the P2P's rail went ahead of it";
}

TEST_F(TopologySchedulingTest, AnAllReduceOnNvLinkIsNotHeldByNicTraffic) {
  // Every NIC of node0 busy with P2P.
  for (int i = 0; i < 8; ++i) Submit(TrafficClass::kP2P, links_.P2P(ep_[i], ep_[8 + i]), false, 1);
  // A tensor-parallel all-reduce over node0's 8 GPUs stays on NVLink.
  const std::vector<int> nvl = links_.Ring(std::span(ep_).first(8));
  ASSERT_FALSE(nvl.empty());
  const sched::TaskId dense = Submit(TrafficClass::kDense, nvl, true, 2);
  const sched::ReleasedTask* r = opener_.Find(dense);
  ASSERT_NE(r, nullptr) << "an NVLink all-reduce was held by NIC traffic";
  EXPECT_EQ(r->reason, sched::ReleaseReason::kDenseGap);
  // A data-parallel all-reduce across the hosts on those NICs is held.
  const sched::TaskId across = Submit(TrafficClass::kDense, links_.Ring(ep_), true, 3);
  EXPECT_EQ(opener_.Find(across), nullptr);
}

}  // namespace
}  // namespace trirace::topo
