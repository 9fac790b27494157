// The fault matrix (docs/reliability.md): the hybrid example trains on a
// test bed of 2 hosts x 2 ranks under TRIRACE_MODE=schedule, over hostccl
// and the net plugin, and something breaks mid-run. Each case runs once per
// policy (fifo, priority, trirace); the 60 s pause runs the three at once.
//
// What each case expects, written down before the test:
//  - a pause of a rank or a link, of any length while the hosts stay
//    alive, is survived with the right result (a stopped process's kernel
//    still answers; plugin/transport/tcp/peer_liveness.h);
//  - a peer that is gone (link cut past TRIRACE_NET_TIMEOUT_MS, host
//    removed, rank killed) is an error on every survivor within kBoundS,
//    each survivor exiting on its own (no gate stays closed: the process
//    ends, with exit 1, not by the example's watchdog, 124, or a signal);
//  - the occupancy segment removed, corrupted or never published: survived
//    with the right result.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "faults/fault_job.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testbed/testbed_fixture.h"

namespace trirace::faults {
namespace {

using ::testing::HasSubstr;
using testbed::Testbed;

// A survivor must have failed by then. A rank waiting on the network
// fails once the peer has been silent for the timeout (plus the keepalive
// probes' one-second grain and its own exit); a rank first blocked on a
// same-host peer learns of it when that peer exits, and may then wait on a
// connection of its own for another timeout.
constexpr double kBoundS = 2 * kNetTimeoutMs / 1000.0 + 3.0;
constexpr int kMidRunMs = 2500;
const std::vector<std::string> kPolicies = {"fifo", "priority", "trirace"};

// One line per job, for the table in docs/reliability.md.
void Report(const std::string& policy, const JobEnd& end) {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("FAULT %s/%s: job exit %d, ended %.2f s after the fault;", t->name(), policy.c_str(), end.exit_code,
              end.seconds_after_fault);
  for (size_t r = 0; r < end.ranks.size(); ++r) {
    std::printf(" rank %zu exit %d at %.2f s;", r, end.ranks[r].exit_code, end.ranks[r].seconds_after_fault);
  }
  std::printf(" left in /dev/shm: %zu\n", end.left_in_shm.size());
}

void ExpectSurvived(const JobEnd& end) {
  EXPECT_EQ(end.exit_code, 0) << end.Describe();
  EXPECT_FALSE(end.timed_out) << end.Describe();
  EXPECT_EQ(end.checksum, end.expected) << "the result changed\n" << end.Describe();
}

// Every rank in `survivors` ended on its own with exit 1 within kBoundS of
// the fault, saying that a peer was lost.
void ExpectFailedWithinBound(const JobEnd& end, const std::vector<int>& survivors) {
  EXPECT_FALSE(end.timed_out) << end.Describe();
  ASSERT_EQ(end.ranks.size(), 4u) << end.Describe();
  for (int r : survivors) {
    const RankEnd& re = end.ranks[static_cast<size_t>(r)];
    EXPECT_EQ(re.exit_code, 1) << "rank " << r << "\n" << end.Describe();
    EXPECT_GE(re.seconds_after_fault, 0) << "rank " << r << "\n" << end.Describe();
    EXPECT_LE(re.seconds_after_fault, kBoundS) << "rank " << r << "\n" << end.Describe();
    // ncclGetErrorString(ncclRemoteError), as the example prints it.
    EXPECT_THAT(end.rank_err[static_cast<size_t>(r)], HasSubstr("remote process exited or there was a network error"))
        << "rank " << r << "\n" << end.Describe();
  }
}

// A fault: `start` breaks something in one job's test bed, `stop` (after
// `hold` for every job) mends it, if it is a pause.
struct Fault {
  std::function<void(FaultJob&)> start;
  std::chrono::milliseconds hold{0};
  std::function<void(FaultJob&)> stop;
  int mid_run_ms = kMidRunMs;
  std::vector<std::string> env;  // extra environment of every rank
};

// Runs one job per policy in `policies`, all at once, applies `fault` to
// each mid-run, and judges each end with `judge`.
void RunJobs(const std::function<bool(Testbed*)>& up,
             const std::vector<std::string>& policies, const Fault& fault, int iterations,
             const std::function<void(const JobEnd&)>& judge) {
  std::vector<Testbed> beds(policies.size());
  for (Testbed& tb : beds) {
    if (!up(&tb)) return;
  }
  std::vector<std::unique_ptr<FaultJob>> jobs;
  for (size_t i = 0; i < policies.size(); ++i) {
    JobOptions o;
    o.policy = policies[i];
    o.env = fault.env;
    o.iterations = iterations;
    jobs.push_back(std::make_unique<FaultJob>(beds[i], o));
    ASSERT_TRUE(jobs.back()->Start());
  }
  // The same moment in every job: all ranks up, then mid-run.
  for (auto& job : jobs) ASSERT_TRUE(job->WaitForRanks());
  std::this_thread::sleep_for(std::chrono::milliseconds(fault.mid_run_ms));
  for (auto& job : jobs) ASSERT_TRUE(job->AllRanksRun());
  for (auto& job : jobs) {
    job->MarkFault();
    if (fault.start) fault.start(*job);
  }
  std::this_thread::sleep_for(fault.hold);
  for (auto& job : jobs) {
    if (fault.stop) fault.stop(*job);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE("TRIRACE_POLICY=" + policies[i]);
    JobEnd end = jobs[i]->Finish();
    Report(policies[i], end);
    judge(end);
  }
}

class FaultMatrix : public testbed::TestbedTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void ForThePolicy(const Fault& fault, const std::function<void(const JobEnd&)>& judge) {
    if (std::string(SHIM_PATH).empty()) GTEST_SKIP() << "libtrirace.so is not built";
    auto up = [this](Testbed* tb) {
      UpOrSkip({"--hosts", "2", "--rate", "1gbit"}, tb);
      return !IsSkipped() && !HasFailure();
    };
    RunJobs(up, {GetParam()}, fault, JobOptions{}.iterations, judge);
  }
};

// host 1's first rank.
pid_t FirstRankOfHost1(const FaultJob& job) {
  std::vector<pid_t> pids = job.RankPids(1);
  EXPECT_FALSE(pids.empty());
  return pids.empty() ? -1 : pids[0];
}

Fault StopARank(std::chrono::milliseconds how_long) {
  auto stopped = std::make_shared<std::vector<pid_t>>();
  Fault f;
  f.start = [stopped](FaultJob& job) {
    pid_t p = FirstRankOfHost1(job);
    if (p > 0 && kill(p, SIGSTOP) == 0) stopped->push_back(p);
  };
  f.hold = how_long;
  f.stop = [stopped](FaultJob&) {
    for (pid_t p : *stopped) kill(p, SIGCONT);
    stopped->clear();
  };
  return f;
}

// The switch side of host 1's uplink: the host sees no link change and its
// packets are dropped, as with a cable pulled out.
void CutHost1(FaultJob& job) { Shell("ip -n " + FabricNs(job.testbed()) + " link set p1 down"); }
void MendHost1(FaultJob& job) { Shell("ip -n " + FabricNs(job.testbed()) + " link set p1 up"); }

TEST_P(FaultMatrix, ARankStoppedFor2sIsSurvived) {
  ForThePolicy(StopARank(std::chrono::seconds(2)), ExpectSurvived);
}

TEST_P(FaultMatrix, ALinkCutFor1sIsSurvived) {
  Fault f;
  f.start = CutHost1;
  f.hold = std::chrono::seconds(1);
  f.stop = MendHost1;
  ForThePolicy(f, ExpectSurvived);
}

TEST_P(FaultMatrix, ALinkCutPastTheTimeoutFailsEveryRankWithinTheBound) {
  Fault f;
  f.start = CutHost1;
  ForThePolicy(f, [](const JobEnd& end) { ExpectFailedWithinBound(end, {0, 1, 2, 3}); });
}

TEST_P(FaultMatrix, AHostRemovedFailsTheOthersWithinTheBound) {
  Fault f;
  // Host 1 vanishes: its uplink goes first (so its dying sockets send no
  // reset), then its processes and its namespace.
  f.start = [](FaultJob& job) {
    Shell("ip -n " + FabricNs(job.testbed()) + " link del p1");
    for (pid_t p : job.RankPids(1)) kill(p, SIGKILL);
    Shell("ip netns del " + HostNs(job.testbed(), 1));
  };
  ForThePolicy(f, [](const JobEnd& end) { ExpectFailedWithinBound(end, {0, 1}); });
}

TEST_P(FaultMatrix, ARankKilledFailsTheOthersWithinTheBound) {
  Fault f;
  f.start = [](FaultJob& job) {
    pid_t p = FirstRankOfHost1(job);
    if (p > 0) kill(p, SIGKILL);
  };
  ForThePolicy(f, [](const JobEnd& end) {
    ASSERT_EQ(end.ranks.size(), 4u) << end.Describe();
    EXPECT_EQ(end.ranks[2].exit_code, 128 + SIGKILL) << end.Describe();
    ExpectFailedWithinBound(end, {0, 1, 3});
  });
}

TEST_P(FaultMatrix, AStarvedEngineStillGivesTheResult) {
  // Busy loops beside the four ranks on this machine's cores: every
  // rank's engine thread waits for a core.
  auto hogs = std::make_shared<std::unique_ptr<testing_support::ChildGroup>>();
  Fault f;
  f.mid_run_ms = 500;
  f.start = [hogs](FaultJob&) {
    if (*hogs) return;
    *hogs = std::make_unique<testing_support::ChildGroup>(120000);
    for (int i = 0; i < 4; ++i) (*hogs)->Start({"sh", "-c", "while :; do :; done"});
  };
  ForThePolicy(f, ExpectSurvived);
}

TEST_P(FaultMatrix, TheOccupancySegmentRemovedOrCorruptedMidRunIsSurvived) {
  Fault f;
  // Garbage over the header and the first slots; half a second later the
  // name is removed.
  f.start = [](FaultJob& job) {
    std::vector<std::string> segments = ShmEntries(job.testbed().name + "-h");
    EXPECT_FALSE(segments.empty()) << "no occupancy segment of this test bed in /dev/shm";
    for (const std::string& s : segments) {
      Shell("head -c 8192 /dev/urandom | dd of=/dev/shm/" + s + " conv=notrunc status=none");
    }
  };
  f.hold = std::chrono::milliseconds(500);
  f.stop = [](FaultJob& job) {
    for (const std::string& s : ShmEntries(job.testbed().name + "-h")) Shell("rm -f /dev/shm/" + s);
  };
  ForThePolicy(f, ExpectSurvived);
}

TEST_P(FaultMatrix, NoOccupancyPublisherIsSurvived) {
  Fault f;
  f.env = {"TRIRACE_NET_OCCUPANCY=0"};
  f.start = [](FaultJob& job) {
    EXPECT_EQ(ShmEntries(job.testbed().name + "-h"), std::vector<std::string>{}) << "a segment appeared";
  };
  ForThePolicy(f, ExpectSurvived);
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, FaultMatrix, ::testing::Values("fifo", "priority", "trirace"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// A rank stopped for 60 s, as a debugger or a long checkpoint stops one,
// under each policy: the three jobs run at once (longer, so that all three
// are mid-run when the stop comes), so the case costs one minute. The
// stopped rank receives 16 MiB gradient buckets: its socket buffers fill
// and its peers' windows stay zero meanwhile. scripts/test.sh runs it with
// TRIRACE_TEST_LONG=1 (CI's budget).
class LongPause : public testbed::TestbedTest {};

TEST_F(LongPause, ARankStoppedFor60sUnderEveryPolicyIsSurvived) {
  if (std::string(SHIM_PATH).empty()) GTEST_SKIP() << "libtrirace.so is not built";
  auto up = [this](Testbed* tb) {
    UpOrSkip({"--hosts", "2", "--rate", "1gbit"}, tb);
    return !IsSkipped() && !HasFailure();
  };
  RunJobs(up, kPolicies, StopARank(std::chrono::seconds(60)), 400, ExpectSurvived);
}

}  // namespace
}  // namespace trirace::faults
