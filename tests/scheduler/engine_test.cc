// The engine: releases on each trigger (submit, completion, occupancy
// sample, timer), the hold bound in simulated time, the engine thread, and
// concurrent submit/complete (run this suite in the TSan build too).
#include "scheduler/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "scheduler/adversarial_policy.h"
#include "scheduler/fifo_policy.h"
#include "scheduler/priority_policy.h"
#include "scheduler/trirace_policy.h"

namespace trirace::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr uint64_t kMiB = 1 << 20;
constexpr int64_t kMs = 1'000'000;

// Records every opened gate; lets a test wait for a count without sleeping.
class RecordingOpener : public GateOpener {
 public:
  void OpenGate(const ReleasedTask& t) override {
    std::lock_guard<std::mutex> lock(mu_);
    opened_.push_back(t);
    cv_.notify_all();
  }
  std::vector<ReleasedTask> opened() const {
    std::lock_guard<std::mutex> lock(mu_);
    return opened_;
  }
  std::vector<TaskId> ids() const {
    std::vector<TaskId> out;
    for (const ReleasedTask& t : opened()) out.push_back(t.id);
    return out;
  }
  // True once `n` gates opened; false after 30 s (a hang, reported as such).
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return opened_.size() >= n; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ReleasedTask> opened_;
};

// Holds everything: only the engine's own bound releases.
class NeverPolicy : public Policy {
 public:
  std::string_view name() const override { return "never"; }
  void Decide(const SchedulerView&, Decision*) override {}
};

// Completions the test hands over, polled by the engine.
class QueuePoller : public CompletionPoller {
 public:
  void Push(TaskId id) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(id);
  }
  void PollCompletions(std::vector<TaskId>* done) override {
    std::lock_guard<std::mutex> lock(mu_);
    done->insert(done->end(), queue_.begin(), queue_.end());
    queue_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<TaskId> queue_;
};

TriracePolicyConfig StrictTrirace() {
  TriracePolicyConfig c;
  c.dense_window_bytes = 8 * kMiB;
  c.dense_credit_bytes = 0;
  c.dense_credit_ns = 0;  // no credit
  c.deadline_slack_ns = 1 * kMs;
  c.foreign_headroom = 0.1;
  return c;
}

EngineOptions SimOptions(ManualClock* clock, int64_t max_hold_ns = 5 * kMs) {
  EngineOptions o;
  o.clock = clock;
  o.max_hold_ns = max_hold_ns;
  o.start_thread = false;
  return o;
}

TaskSpec Dense(uint64_t bytes, std::vector<LinkId> links, CommId comm = 1) {
  return {.comm = comm, .traffic_class = TrafficClass::kDense, .bytes = bytes, .links = std::move(links)};
}

TEST(EngineTest, ReleasesOnSubmitBeforeSubmitReturns) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<FifoPolicy>(), &opener, SimOptions(&clock));
  const TaskId id = engine.Submit({.comm = 3, .bytes = 10, .cookie = 42});
  ASSERT_THAT(opener.opened(), SizeIs(1));
  EXPECT_EQ(opener.opened()[0].id, id);
  EXPECT_EQ(opener.opened()[0].cookie, 42u);
  EXPECT_EQ(opener.opened()[0].reason, ReleaseReason::kFifo);
  EXPECT_EQ(engine.pending_count(), 0u);
  EXPECT_EQ(engine.running_count(), 1u);
  EXPECT_TRUE(engine.Complete(id).ok());
  EXPECT_EQ(engine.running_count(), 0u);
}

TEST(EngineTest, ReleasesOnCompletion) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<PriorityPolicy>(PriorityPolicyConfig{.window_bytes = 8 * kMiB}), &opener,
                SimOptions(&clock));
  const TaskId a = engine.Submit(Dense(8 * kMiB, {}, 1));
  const TaskId b = engine.Submit(Dense(8 * kMiB, {}, 2));
  EXPECT_THAT(opener.ids(), ElementsAre(a));
  ASSERT_TRUE(engine.Complete(a).ok());
  EXPECT_THAT(opener.ids(), ElementsAre(a, b));
}

TEST(EngineTest, ReleasesOnOccupancySampleAndAdvancesCommHeadsInOnePass) {
  ManualClock clock(1 * kMs);
  RecordingOpener opener;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, SimOptions(&clock));
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 10e9});
  engine.ReportOccupancy(nic, 9.5e9);
  const TaskId a = engine.Submit(Dense(1 * kMiB, {nic}, 7));
  const TaskId b = engine.Submit(Dense(1 * kMiB, {nic}, 7));
  EXPECT_THAT(opener.ids(), IsEmpty()) << "foreign traffic leaves no headroom";
  engine.ReportOccupancy(nic, 0);
  EXPECT_THAT(opener.ids(), ElementsAre(a, b)) << "b becomes its comm's head in the same call";
  EXPECT_EQ(opener.opened()[1].reason, ReleaseReason::kDenseGap);
}

TEST(EngineTest, ForeignEstimateIgnoresSamplesMixedWithOurTraffic) {
  ManualClock clock(1 * kMs);
  RecordingOpener opener;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, SimOptions(&clock));
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 10e9});
  engine.ReportOccupancy(nic, 0);  // idle: foreign = 0
  const TaskId ours = engine.Submit(Dense(4 * kMiB, {nic}, 1));
  ASSERT_THAT(opener.ids(), ElementsAre(ours));
  engine.ReportOccupancy(nic, 9.5e9);  // that is our own transfer: not foreign
  const TaskId next = engine.Submit(Dense(1 * kMiB, {nic}, 2));
  EXPECT_THAT(opener.ids(), ElementsAre(ours, next));
  engine.ReportOccupancy(nic, 9.5e9, /*ours=*/0);  // the source says none of it is ours
  engine.Submit(Dense(1 * kMiB, {nic}, 3));
  EXPECT_THAT(opener.ids(), SizeIs(2));
}

TEST(EngineTest, ReleasesOnTheTimerThePolicyAsksFor) {
  ManualClock clock(0);
  RecordingOpener opener;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, SimOptions(&clock, 100 * kMs));
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 10e9});
  engine.Submit({.comm = 9, .traffic_class = TrafficClass::kP2P, .bytes = 1, .links = {nic}, .gated = false});
  TaskSpec spec = Dense(1 * kMiB, {nic});
  spec.deadline_ns = 10 * kMs;
  const TaskId id = engine.Submit(spec);
  EXPECT_THAT(opener.ids(), IsEmpty()) << "P2P is active and the credit is 0";
  const int64_t wake = engine.Step();
  EXPECT_EQ(wake, 9 * kMs);
  clock.SetNs(wake - 1);
  engine.Step();
  EXPECT_THAT(opener.ids(), IsEmpty());
  clock.SetNs(wake);
  engine.Step();
  ASSERT_THAT(opener.ids(), ElementsAre(id));
  EXPECT_EQ(opener.opened()[0].reason, ReleaseReason::kDeadline);
}

TEST(EngineTest, BeginIterationFeedsTheDeadlineRule) {
  ManualClock clock(0);
  RecordingOpener opener;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, SimOptions(&clock, 100 * kMs));
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 10e9});
  engine.Submit({.comm = 9, .traffic_class = TrafficClass::kP2P, .bytes = 1, .links = {nic}, .gated = false});
  engine.BeginIteration(3);
  TaskSpec spec = Dense(1 * kMiB, {nic});
  spec.tag.iteration = 3;
  const TaskId id = engine.Submit(spec);
  EXPECT_THAT(opener.ids(), IsEmpty());
  clock.AdvanceNs(kMs);
  engine.BeginIteration(4);
  ASSERT_THAT(opener.ids(), ElementsAre(id));
  EXPECT_EQ(opener.opened()[0].reason, ReleaseReason::kDeadline);
}

TEST(EngineTest, UngatedTasksCountOnTheirLinksUntilComplete) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, SimOptions(&clock));
  const LinkId nic = engine.AddLink({.name = "nic:a"});
  const TaskId p2p = engine.Submit(
      {.comm = 9, .traffic_class = TrafficClass::kP2P, .bytes = 1, .links = {nic}, .gated = false});
  const TaskId dense = engine.Submit(Dense(1 * kMiB, {nic}));
  EXPECT_THAT(opener.ids(), IsEmpty()) << "an ungated task never reaches the opener";
  ASSERT_TRUE(engine.Complete(p2p).ok());
  EXPECT_THAT(opener.ids(), ElementsAre(dense));
}

TEST(EngineTest, HoldBoundIsExactUnderManualClockWhateverThePolicy) {
  ManualClock clock(0);
  RecordingOpener opener;
  Engine engine(std::make_unique<NeverPolicy>(), &opener, SimOptions(&clock, 3 * kMs));
  std::vector<TaskId> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(engine.Submit(Dense(1, {}, i)));
    clock.AdvanceNs(kMs / 2);
  }
  size_t seen = 0;
  for (int64_t wake = engine.Step(); wake != kNeverNs; wake = engine.Step()) {
    EXPECT_EQ(opener.opened().size(), seen) << "nothing may be released before its bound";
    clock.SetNs(wake);
    engine.Step();
    const std::vector<ReleasedTask> opened = opener.opened();
    ASSERT_GT(opened.size(), seen);
    for (; seen < opened.size(); ++seen) {
      EXPECT_EQ(opened[seen].reason, ReleaseReason::kMaxHold);
      EXPECT_EQ(opened[seen].release_ns - opened[seen].enqueue_ns, 3 * kMs);
    }
  }
  EXPECT_EQ(seen, ids.size());
  EXPECT_EQ(engine.stats().held_to_bound, ids.size());
  EXPECT_EQ(engine.stats().longest_hold_ns, 3 * kMs);
}

TEST(EngineTest, AdversarialPolicyStaysWithinTheBound) {
  ManualClock clock(0);
  RecordingOpener opener;
  Engine engine(std::make_unique<AdversarialPolicy>(AdversarialPolicyConfig{.seed = 11, .max_delay_ns = 2 * kMs}),
                &opener, SimOptions(&clock, 3 * kMs));
  for (int i = 0; i < 200; ++i) {
    engine.Submit(Dense(1, {}, i % 4));
    clock.AdvanceNs(20'000);
  }
  for (int64_t wake = engine.Step(); wake != kNeverNs; wake = engine.Step()) clock.SetNs(wake);
  EXPECT_EQ(opener.opened().size(), 200u);
  EXPECT_LT(engine.stats().longest_hold_ns, 3 * kMs);
  EXPECT_EQ(engine.stats().held_to_bound, 0u) << "the policy released everything itself";
}

TEST(EngineTest, CompletionErrorsNameTheTask) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<NeverPolicy>(), &opener, SimOptions(&clock));
  const TaskId held = engine.Submit(Dense(1, {}));
  EXPECT_EQ(engine.Complete(held).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(engine.Complete(held).message(), ::testing::HasSubstr("gate is still closed"));
  EXPECT_EQ(engine.Complete(12345).code(), absl::StatusCode::kNotFound);
}

TEST(EngineTest, StopOpensEveryHeldGateAndLaterSubmitsPassThrough) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<NeverPolicy>(), &opener, SimOptions(&clock));
  const TaskId a = engine.Submit(Dense(1, {}, 1));
  const TaskId b = engine.Submit(Dense(1, {}, 1));
  engine.Stop();
  EXPECT_THAT(opener.ids(), ElementsAre(a, b));
  const TaskId c = engine.Submit(Dense(1, {}, 1));
  EXPECT_THAT(opener.ids(), ElementsAre(a, b, c));
  for (const ReleasedTask& t : opener.opened()) EXPECT_EQ(t.reason, ReleaseReason::kShutdown);
  engine.Stop();  // idempotent
}

TEST(EngineTest, StepPollsCompletions) {
  ManualClock clock;
  RecordingOpener opener;
  QueuePoller poller;
  Engine engine(std::make_unique<PriorityPolicy>(PriorityPolicyConfig{.window_bytes = 4 * kMiB}), &opener,
                SimOptions(&clock));
  engine.SetCompletionPoller(&poller);
  const TaskId a = engine.Submit(Dense(4 * kMiB, {}, 1));
  const TaskId b = engine.Submit(Dense(4 * kMiB, {}, 2));
  EXPECT_LT(engine.Step(), kNeverNs) << "running tasks need polling";
  EXPECT_THAT(opener.ids(), ElementsAre(a));
  poller.Push(a);
  engine.Step();
  EXPECT_THAT(opener.ids(), ElementsAre(a, b));
  EXPECT_EQ(engine.stats().completed, 1u);
}

TEST(EngineTest, ReservedIdsAreUsedAndOrderFollowsSubmission) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<PriorityPolicy>(PriorityPolicyConfig{.window_bytes = 1}), &opener,
                SimOptions(&clock));
  const TaskId later = engine.ReserveId();
  const TaskId earlier = engine.ReserveId();
  EXPECT_NE(later, earlier);
  ASSERT_EQ(engine.Submit(Dense(1, {}, 1)), later + 2) << "a plain Submit takes a fresh id";
  EXPECT_EQ(engine.Submit(Dense(1, {}, 2), earlier), earlier);
  EXPECT_EQ(engine.Submit(Dense(1, {}, 3), later), later);
  // The window admits one task at a time: release order is submission order.
  ASSERT_TRUE(engine.Complete(later + 2).ok());
  ASSERT_TRUE(engine.Complete(earlier).ok());
  EXPECT_THAT(opener.ids(), ElementsAre(later + 2, earlier, later));
  EXPECT_NE(engine.Submit(Dense(1, {}, 4), later), later) << "an id in use is not reused";
}

TEST(EngineTest, LinksAddedAfterATaskDoNotCorruptItsAccounting) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, SimOptions(&clock));
  const TaskId p2p = engine.Submit(
      {.comm = 9, .traffic_class = TrafficClass::kP2P, .bytes = 1, .links = {0}, .gated = false});
  const LinkId nic = engine.AddLink({.name = "nic:a"});
  ASSERT_EQ(nic, 0u);
  ASSERT_TRUE(engine.Complete(p2p).ok());
  // Had the P2P task been counted off a link it was never counted on, the
  // link would look busy forever and this DENSE task would be held.
  const TaskId dense = engine.Submit(Dense(1 * kMiB, {nic}));
  EXPECT_THAT(opener.ids(), ElementsAre(dense));
}

// --- the engine thread ----------------------------------------------------

TEST(EngineThreadTest, ReleasesAtTheHoldBoundWithoutAnyCall) {
  RecordingOpener opener;
  EngineOptions o;
  o.max_hold_ns = 2 * kMs;
  Engine engine(std::make_unique<NeverPolicy>(), &opener, o);
  engine.Submit(Dense(1, {}));
  ASSERT_TRUE(opener.WaitFor(1)) << "the engine thread never opened the gate";
  const ReleasedTask t = opener.opened()[0];
  EXPECT_EQ(t.reason, ReleaseReason::kMaxHold);
  EXPECT_GE(t.release_ns - t.enqueue_ns, 2 * kMs);
}

TEST(EngineThreadTest, KickMakesTheThreadSeeAManualClockMove) {
  ManualClock clock(0);
  RecordingOpener opener;
  EngineOptions o;
  o.clock = &clock;
  o.max_hold_ns = 1 * kMs;
  Engine engine(std::make_unique<NeverPolicy>(), &opener, o);
  engine.Submit(Dense(1, {}));
  clock.AdvanceNs(1 * kMs);
  engine.Kick();
  ASSERT_TRUE(opener.WaitFor(1));
  EXPECT_EQ(opener.opened()[0].release_ns, 1 * kMs);
}

TEST(EngineThreadTest, ThreadPollsCompletionsAndReleasesTheNextTask) {
  RecordingOpener opener;
  QueuePoller poller;
  EngineOptions o;
  o.max_hold_ns = 60'000 * kMs;  // only the completion may release b
  Engine engine(std::make_unique<PriorityPolicy>(PriorityPolicyConfig{.window_bytes = 4 * kMiB}), &opener, o);
  engine.SetCompletionPoller(&poller);
  const TaskId a = engine.Submit(Dense(4 * kMiB, {}, 1));
  const TaskId b = engine.Submit(Dense(4 * kMiB, {}, 2));
  ASSERT_TRUE(opener.WaitFor(1));
  poller.Push(a);
  ASSERT_TRUE(opener.WaitFor(2)) << "the thread did not poll the completion";
  EXPECT_THAT(opener.ids(), ElementsAre(a, b));
  EXPECT_GE(engine.stats().polls, 1u);
}

// Several threads submit while another completes whatever was released.
void RunConcurrently(std::unique_ptr<Policy> policy) {
  constexpr int kSubmitters = 4;
  constexpr int kPerThread = 1500;
  RecordingOpener opener;
  EngineOptions o;
  o.max_hold_ns = 1 * kMs;
  Engine engine(std::move(policy), &opener, o);
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 1e9});
  std::thread completer([&] {
    size_t completed = 0;
    while (completed < size_t{kSubmitters * kPerThread}) {
      if (!opener.WaitFor(completed + 1)) break;  // a hang: the checks below fail
      const std::vector<TaskId> ids = opener.ids();
      for (; completed < ids.size(); ++completed) ASSERT_TRUE(engine.Complete(ids[completed]).ok());
    }
  });
  std::vector<std::thread> submitters;
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      for (int i = 0; i < kPerThread; ++i) {
        const TrafficClass cls = static_cast<TrafficClass>((i + s) % kNumTrafficClasses);
        engine.Submit({.comm = static_cast<CommId>(s), .traffic_class = cls, .bytes = 256 * 1024, .links = {nic}});
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  completer.join();
  const std::vector<TaskId> ids = opener.ids();
  EXPECT_EQ(ids.size(), size_t{kSubmitters * kPerThread});
  EXPECT_EQ(std::set<TaskId>(ids.begin(), ids.end()).size(), ids.size()) << "a gate was opened twice";
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.submitted, st.released);
  EXPECT_EQ(st.completed, st.released);
  EXPECT_EQ(engine.pending_count() + engine.running_count(), 0u);
}

TEST(EngineThreadTest, ConcurrentSubmitAndCompleteUnderTrirace) {
  RunConcurrently(std::make_unique<TriracePolicy>(StrictTrirace()));
}

TEST(EngineThreadTest, ConcurrentSubmitAndCompleteUnderAdversarial) {
  RunConcurrently(std::make_unique<AdversarialPolicy>(AdversarialPolicyConfig{.seed = 5, .max_delay_ns = kMs / 2}));
}

// The tuner inside the engine: a link where DENSE waits in a gap while the
// link is measured mostly idle (the running ops wait for their peers) gets a
// wider window after one interval; the policy uses it in the same pass, and
// the listener hears of it.
TEST(EngineTest, TunerWidensAWindowDenseWaitedOnAndTellsTheListener) {
  ManualClock clock;
  RecordingOpener opener;
  EngineOptions options = SimOptions(&clock, 1'000 * kMs);
  options.tuning.enabled = true;
  options.tuning.interval_ns = 100 * kMs;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, options);
  std::vector<TuningChange> heard;
  engine.SetTuningListener([&heard](const TuningChange& c) { heard.push_back(c); });
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 1.25e9});
  std::vector<TaskId> ids;
  for (CommId comm = 1; comm <= 5; ++comm) ids.push_back(engine.Submit(Dense(2 * kMiB, {nic}, comm)));
  EXPECT_THAT(opener.ids(), SizeIs(4)) << "8 MiB window";
  for (int i = 0; i < 10; ++i) {
    clock.AdvanceNs(10 * kMs);
    engine.ReportOccupancy(nic, 0.25e9);  // 20% of the link
  }
  ASSERT_THAT(heard, SizeIs(1));
  EXPECT_STREQ(heard[0].why, "window-room");
  EXPECT_EQ(heard[0].link_name, "nic:a");
  EXPECT_DOUBLE_EQ(heard[0].window_scale, 1.25);
  EXPECT_THAT(opener.ids(), SizeIs(5)) << "10 MiB window";
  EXPECT_EQ(opener.opened()[4].reason, ReleaseReason::kDenseGap);
  EXPECT_EQ(engine.stats().tuning_changes, 1u);
}

TEST(EngineTest, TunerOffLeavesTheWindowAlone) {
  ManualClock clock;
  RecordingOpener opener;
  Engine engine(std::make_unique<TriracePolicy>(StrictTrirace()), &opener, SimOptions(&clock, 1'000 * kMs));
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 1.25e9});
  for (CommId comm = 1; comm <= 5; ++comm) engine.Submit(Dense(2 * kMiB, {nic}, comm));
  for (int i = 0; i < 10; ++i) {
    clock.AdvanceNs(10 * kMs);
    engine.ReportOccupancy(nic, 0.25e9);
  }
  EXPECT_THAT(opener.ids(), SizeIs(4));
  EXPECT_EQ(engine.stats().tuning_changes, 0u);
}

}  // namespace
}  // namespace trirace::sched
