// fifo, priority and the adversarial test policy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "scheduler/adversarial_policy.h"
#include "scheduler/fifo_policy.h"
#include "scheduler/priority_policy.h"
#include "view_builder.h"

namespace trirace::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::Optional;
using testing::ReasonFor;
using testing::ViewBuilder;

constexpr uint64_t kMiB = 1 << 20;
constexpr int64_t kMs = 1'000'000;

std::vector<TaskId> Ids(const Decision& d) {
  std::vector<TaskId> ids;
  for (const Release& r : d.releases) ids.push_back(r.id);
  return ids;
}

TEST(FifoPolicyTest, ReleasesEverythingAtOnceInSubmissionOrder) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kP2P, 64 * kMiB, {nic});
  const Task& a = b.Pending(TrafficClass::kDense, 64 * kMiB, {nic}, 0, 1);
  const Task& c = b.Pending(TrafficClass::kDense, 64 * kMiB, {nic}, 0, 1);  // not a comm head
  const Task& e = b.Pending(TrafficClass::kSparse, 1, {nic}, 0, 2);
  FifoPolicy policy;
  const Decision d = b.Decide(policy, 0);
  EXPECT_THAT(Ids(d), ElementsAre(a.id, c.id, e.id));
  for (const Release& r : d.releases) EXPECT_EQ(r.reason, ReleaseReason::kFifo);
  EXPECT_EQ(d.next_wake_ns, kNeverNs);
}

TEST(PriorityPolicyTest, ReleasesInPriorityThenLayerOrderWithinTheWindow) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  Task& p2p_low = b.Pending(TrafficClass::kP2P, 4 * kMiB, {nic}, 0, 1);
  p2p_low.spec.tag.layer = 9;
  Task& dense_front = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 0, 2);
  dense_front.spec.tag.layer = 0;
  Task& urgent = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 0, 3);
  urgent.spec.tag.layer = 5;
  urgent.spec.tag.priority = 10;
  PriorityPolicy policy({.window_bytes = 8 * kMiB});
  const Decision d = b.Decide(policy, 0);
  // Class-blind: the P2P task waits behind two DENSE tasks with better keys.
  EXPECT_THAT(Ids(d), ElementsAre(urgent.id, dense_front.id));
  EXPECT_THAT(d.releases, ::testing::Each(Field(&Release::reason, ReleaseReason::kPriority)));
}

TEST(PriorityPolicyTest, WindowCountsBytesAlreadyInFlightAndStopsAtTheFirstMisfit) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Running(TrafficClass::kSparse, 6 * kMiB, {nic});
  Task& big = b.Pending(TrafficClass::kDense, 4 * kMiB, {nic}, 0, 1);
  big.spec.tag.layer = 0;
  Task& small = b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, 0, 2);
  small.spec.tag.layer = 1;
  PriorityPolicy policy({.window_bytes = 8 * kMiB});
  EXPECT_TRUE(b.Decide(policy, 0).releases.empty()) << "6 + 4 > 8, and the 1 MiB task may not overtake";
}

TEST(PriorityPolicyTest, ATaskLargerThanTheWindowRunsWhenNothingIsInFlight) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  const Task& huge = b.Pending(TrafficClass::kDense, 64 * kMiB, {nic}, 0, 1);
  PriorityPolicy policy({.window_bytes = 8 * kMiB});
  EXPECT_THAT(ReasonFor(b.Decide(policy, 0), huge.id), Optional(ReleaseReason::kPriority));
}

TEST(PriorityPolicyTest, OnlyCommHeadsAreCandidates) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, 0, 1).spec.tag.layer = 5;
  const Task& second = b.Pending(TrafficClass::kDense, 1 * kMiB, {nic}, 0, 1);
  PriorityPolicy policy({.window_bytes = 8 * kMiB});
  EXPECT_EQ(ReasonFor(b.Decide(policy, 0), second.id), std::nullopt);
}

TEST(AdversarialPolicyTest, ReleasesEveryTaskWithinTheDelayBound) {
  ViewBuilder b;
  const LinkId nic = b.AddLink();
  std::vector<TaskId> ids;
  for (int i = 0; i < 50; ++i) ids.push_back(b.Pending(TrafficClass::kDense, 1, {nic}, 0, i % 3).id);
  AdversarialPolicy policy({.seed = 7, .max_delay_ns = 2 * kMs});
  std::set<TaskId> released;
  int64_t now = 0;
  Decision d = b.Decide(policy, now);
  for (TaskId id : Ids(d)) released.insert(id);
  while (d.next_wake_ns != kNeverNs) {
    ASSERT_GT(d.next_wake_ns, now);
    ASSERT_LE(d.next_wake_ns, 2 * kMs);
    now = d.next_wake_ns;
    d = b.Decide(policy, now);  // the builder keeps offering all tasks; ids repeat
    for (TaskId id : Ids(d)) released.insert(id);
  }
  EXPECT_EQ(released.size(), ids.size());
  EXPECT_LE(now, 2 * kMs);
}

TEST(AdversarialPolicyTest, SameSeedSameDecisionsAndSeedsDiffer) {
  auto run = [](uint64_t seed) {
    ViewBuilder b;
    const LinkId nic = b.AddLink();
    for (int i = 0; i < 20; ++i) b.Pending(TrafficClass::kDense, 1, {nic}, 0, 0);
    AdversarialPolicy policy({.seed = seed, .max_delay_ns = kMs});
    std::vector<TaskId> order;
    for (int64_t t = 0; t <= kMs; t += kMs / 10) {
      for (TaskId id : Ids(b.Decide(policy, t))) {
        if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
      }
    }
    return order;
  };
  EXPECT_EQ(run(3), run(3));
  EXPECT_NE(run(3), run(4));
  // All 20 tasks are on one comm: a random order releases later ones first.
  const std::vector<TaskId> order = run(3);
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
}

}  // namespace
}  // namespace trirace::sched
