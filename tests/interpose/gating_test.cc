// Schedule mode (gated launch) over hostccl with libtrirace.so preloaded:
// for every policy and for the adversarial test policy (random release
// order and delays), a seeded random workload (every collective, chunked
// AllReduce/Reduce/Broadcast, grouped send/recv, several comms and threads)
// gives byte-identical results and return codes to TRIRACE_MODE=off; every
// rank's trace shows each op of each comm completing in issue order, every
// chunk present, every gated unit released within the hold bound; and no run
// hangs (each is killed at a timeout). Passthrough cases
// (CUDA_DEVICE_MAX_CONNECTIONS=1, TRIRACE_EXCLUDE_ROLES) gate nothing and
// change nothing. examples/hybrid_parallel, when built, runs under every
// policy and prints the checksum of the run without the shim.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/device/device.h"
#include "interpose/gate/comm_lane.h"
#include "interpose/gate/gate_watchdog.h"
#include "interpose/gate/gated_launcher.h"
#include "rank_launcher.h"
#include "trace_file.h"

namespace trirace::interpose::testing {
namespace {

using ::testing::HasSubstr;
using testing_support::MakeTempDir;
using testing_support::ProcessResult;

const std::vector<std::string> kUnset = {
    "LD_PRELOAD",          "TRIRACE_MODE",        "TRIRACE_TRACE",  "TRIRACE_NCCL_LIBRARY",
    "TRIRACE_DEBUG",       "TRIRACE_DEBUG_FILE",  "NCCL_NET_PLUGIN", "TRIRACE_POLICY",
    "TRIRACE_MAX_HOLD_US", "TRIRACE_CHUNK_BYTES", "TRIRACE_EXCLUDE_ROLES", "CUDA_DEVICE_MAX_CONNECTIONS"};

constexpr int kHoldUs = 3000;
// A gate's wait beyond the bound that the test tolerates: the thread that
// opens it at the bound may itself wait for a CPU on a loaded machine.
constexpr double kSchedulingSlackUs = 500000;

struct Workload {
  uint64_t seed;
  int nranks;
  int ops;
};

class GatingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
    dir_ = MakeTempDir("trirace-gating");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // The workload with the shim preloaded in `mode`; extra env on top.
  std::vector<ProcessResult> RunRanks(const Workload& c, const std::string& mode, const std::string& trace,
                                      std::vector<std::pair<std::string, std::string>> env = {}) {
    RankJob job;
    job.nranks = c.nranks;
    job.argv = [&](int rank) {
      return RandomRanksArgv(RANDOM_RANKS, HOSTCCL_LIBRARY, rank, c.nranks, c.seed, c.ops);
    };
    env.push_back({"LD_PRELOAD", SHIM_PATH});
    env.push_back({"TRIRACE_MODE", mode});
    env.push_back({"TRIRACE_MAX_HOLD_US", std::to_string(kHoldUs)});
    env.push_back({"TRIRACE_CHUNK_BYTES", "4096"});  // most AllReduce/Reduce/Broadcast are split
    if (!trace.empty()) env.push_back({"TRIRACE_TRACE", trace});
    job.set_env = env;
    job.unset_env = kUnset;
    job.timeout_ms = 90000;
    return LaunchRanks(job);
  }

  std::string dir_;
};

// "plan <comm> <layer> <funcs...>" lines -> per comm, the funcs in order.
std::map<int, std::vector<std::string>> Plan(const std::string& out) {
  std::map<int, std::vector<std::string>> plan;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("plan ", 0) != 0) continue;
    std::istringstream f(line.substr(5));
    int comm = 0, op = 0;
    f >> comm >> op;
    for (std::string func; f >> func;) plan[comm].push_back(func);
  }
  return plan;
}

void ExpectSameResults(const std::vector<ProcessResult>& off, const std::vector<ProcessResult>& run,
                       const std::string& what) {
  ASSERT_EQ(off.size(), run.size());
  for (size_t r = 0; r < run.size(); ++r) {
    ASSERT_FALSE(run[r].timed_out) << what << ": rank " << r << " hung: " << run[r].err;
    ASSERT_EQ(run[r].exit_code, 0) << what << ": rank " << r << ": " << run[r].err;
    const std::string a = WithoutUidLine(off[r].out), b = WithoutUidLine(run[r].out);
    if (a == b) continue;
    // Name the first line that differs (the outputs are long).
    std::istringstream ia(a), ib(b);
    std::string la, lb;
    while (std::getline(ia, la) && std::getline(ib, lb) && la == lb) {
    }
    ADD_FAILURE() << what << ": rank " << r << " differs from TRIRACE_MODE=off:\n  off:      " << la
                  << "\n  schedule: " << lb << "\nstderr:\n" << run[r].err;
  }
}

struct TraceCheck {
  int gated = 0;     // units with a gate
  int chunked = 0;   // units that are a chunk of a split op
  std::set<int> reasons;
};

// Per comm: every planned op present (all its chunks), completions in issue
// order, gated units released within the bound.
TraceCheck CheckTrace(const std::string& path, const std::string& out, const std::string& what) {
  TraceCheck check;
  TraceFile t;
  std::string error;
  EXPECT_TRUE(ReadTrace(path, &t, &error)) << what << ": " << error;
  EXPECT_EQ(CheckPerfettoStructure(t), "") << what;
  EXPECT_EQ(t.other["incomplete_events"], "0") << what;
  EXPECT_EQ(t.other["dropped_events"], "0") << what;
  const auto plan = Plan(out);
  EXPECT_FALSE(plan.empty()) << what;
  for (const auto& [comm, funcs] : plan) {
    std::vector<TraceOp> ops = OpsOfComm(t, comm);
    std::stable_sort(ops.begin(), ops.end(), [](const TraceOp& a, const TraceOp& b) {
      return a.seq != b.seq ? a.seq < b.seq : a.args.value("chunk", 0) < b.args.value("chunk", 0);
    });
    uint64_t expected_seq = 0;
    double last_end = 0;
    std::string last_what;
    for (size_t i = 0; i < ops.size(); ++i) {
      const TraceOp& op = ops[i];
      const int chunk = op.args.value("chunk", 0);
      const int chunks = op.args.value("chunks", 1);
      if (chunk == 0) {
        EXPECT_EQ(op.seq, expected_seq) << what << " comm " << comm;
        EXPECT_LT(op.seq, funcs.size()) << what << " comm " << comm;
        if (op.seq < funcs.size()) {
          EXPECT_EQ(op.func, funcs[op.seq]) << what << " comm " << comm << " op " << op.seq;
        }
        ++expected_seq;
      } else {
        EXPECT_EQ(op.seq, expected_seq - 1) << what << " comm " << comm << ": chunk without its op";
      }
      if (chunk == chunks - 1 && chunks > 1) check.chunked += chunks;
      EXPECT_EQ(op.result, 0) << what;
      EXPECT_EQ(op.completion, "stream") << what << " comm " << comm << " op " << op.seq;
      const double end = op.ts_us + op.dur_us;
      // Timestamps are epoch microseconds: a double resolves 0.25 us there.
      EXPECT_GE(end + 0.5, last_end) << what << " comm " << comm << " op " << op.seq << " chunk " << chunk
                                       << " (" << op.func << " " << op.args.dump() << ") completed "
                                       << (last_end - end) << " us before an op issued earlier: " << last_what;
      if (end >= last_end) {
        last_end = end;
        last_what = op.func + " " + op.args.dump();
      }
      if (op.args.contains("gate_wait_us")) {
        ++check.gated;
        check.reasons.insert(op.args["release_reason"].get<int>());
        EXPECT_LE(op.args["gate_wait_us"].get<double>(), kHoldUs + kSchedulingSlackUs)
            << what << " comm " << comm << " op " << op.seq << ": held past the bound";
        EXPECT_GE(op.args["run_us"].get<double>(), 0);
      }
    }
    EXPECT_EQ(expected_seq, funcs.size()) << what << " comm " << comm << ": ops missing from the trace";
  }
  return check;
}

// Release reasons (scheduler/task.h ReleaseReason).
constexpr int kReasonFifo = 1;
constexpr int kReasonRandom = 10;

TEST_F(GatingTest, EveryPolicyGivesTheResultsOfModeOffInIssueOrderWithinTheBound) {
  const std::vector<Workload> runs = {{21, 2, 16}, {22, 3, 12}, {25, 4, 10}};
  const std::vector<std::string> policies = {"fifo", "priority", "trirace", "adversarial"};
  for (const Workload& c : runs) {
    const std::vector<ProcessResult> off = RunRanks(c, "off", "");
    for (size_t r = 0; r < off.size(); ++r) ASSERT_EQ(off[r].exit_code, 0) << off[r].err;
    for (const std::string& policy : policies) {
      const std::string what = "seed " + std::to_string(c.seed) + " policy " + policy;
      const std::string trace = dir_ + "/" + policy + "." + std::to_string(c.seed) + ".%r.json";
      const std::vector<ProcessResult> run =
          RunRanks(c, "schedule", trace,
                   {{"TRIRACE_POLICY", policy}, {"TRIRACE_ADVERSARIAL_SEED", std::to_string(c.seed)}});
      ExpectSameResults(off, run, what);
      if (HasFailure()) return;
      for (int r = 0; r < c.nranks; ++r) {
        std::string path = trace;
        path.replace(path.find("%r"), 2, std::to_string(r));
        const TraceCheck check = CheckTrace(path, run[r].out, what + " rank " + std::to_string(r));
        EXPECT_GT(check.gated, 0) << what << ": nothing was gated";
        EXPECT_GT(check.chunked, 0) << what << ": nothing was chunked";
        if (policy == "fifo") {
          EXPECT_EQ(check.reasons, std::set<int>{kReasonFifo}) << what;
        }
        if (policy == "adversarial") {
          EXPECT_TRUE(check.reasons.count(kReasonRandom)) << what;
        }
      }
    }
  }
}

TEST_F(GatingTest, RejectedCallsReturnWhatTheyReturnInModeOff) {
  const Workload c{26, 2, 4};
  auto run = [&](const std::string& mode, const std::string& policy) {
    RankJob j;
    j.nranks = c.nranks;
    j.argv = [&](int rank) {
      std::vector<std::string> argv = RandomRanksArgv(RANDOM_RANKS, HOSTCCL_LIBRARY, rank, c.nranks, c.seed, c.ops);
      argv.insert(argv.end(), {"--errors", "1"});
      return argv;
    };
    j.set_env = {{"LD_PRELOAD", SHIM_PATH}, {"TRIRACE_MODE", mode}, {"TRIRACE_POLICY", policy},
                 {"TRIRACE_CHUNK_BYTES", "4096"}, {"TRIRACE_DEBUG", "NONE"}};
    j.unset_env = kUnset;
    j.timeout_ms = 90000;
    return LaunchRanks(j);
  };
  const std::vector<ProcessResult> off = run("off", "fifo");
  for (const ProcessResult& r : off) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("error dtype rc="));
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("error dtype rc=0"))) << "hostccl accepted a bad datatype";
  }
  for (const std::string policy : {"fifo", "adversarial"}) ExpectSameResults(off, run("schedule", policy), policy);
}

// How many of the ranks' stderr hold `text`.
int CountVerdicts(const std::vector<ProcessResult>& ranks, const std::string& text) {
  int n = 0;
  for (const ProcessResult& r : ranks) n += r.err.find(text) != std::string::npos ? 1 : 0;
  return n;
}

// The start-up verdict: one line for the job, at the default log level, from
// the process that is rank 0 of the first comm (no launcher RANK here).
TEST_F(GatingTest, TheStartUpVerdictIsOneLineForTheJob) {
  const Workload c{25, 2, 8};
  const std::vector<ProcessResult> off = RunRanks(c, "off", "");
  const std::string trace = dir_ + "/verdict.%r.json";
  const std::vector<ProcessResult> run = RunRanks(c, "schedule", trace);
  ExpectSameResults(off, run, "verdict");
  EXPECT_EQ(CountVerdicts(run, "TriRace NOTE INIT TriRace: schedule mode, trirace policy, 2 ranks, "), 1)
      << run[0].err << run[1].err;
  // Each rank's trace carries the verdict in its metadata.
  for (int r = 0; r < c.nranks; ++r) {
    std::string path = trace;
    path.replace(path.find("%r"), 2, std::to_string(r));
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr("\"verdict\":\"TriRace: schedule mode, trirace policy")) << path;
  }
  EXPECT_EQ(CountVerdicts(off, "TriRace: "), 0) << "TRIRACE_MODE=off writes nothing";
}

TEST_F(GatingTest, OneHardwareQueueMeansPassthroughWithOneWarning) {
  const Workload c{23, 2, 8};
  const std::vector<ProcessResult> off = RunRanks(c, "off", "");
  const std::string trace = dir_ + "/conn.%r.json";
  const std::vector<ProcessResult> run =
      RunRanks(c, "schedule", trace, {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}, {"TRIRACE_DEBUG", "WARN"}});
  ExpectSameResults(off, run, "CUDA_DEVICE_MAX_CONNECTIONS=1");
  EXPECT_EQ(CountVerdicts(run, "TriRace NOTE INIT TriRace: OBSERVE ONLY, 2 ranks, because CUDA_DEVICE_MAX_CONNECTIONS=1 "
                               "gives the GPU one hardware queue"), 1);
  EXPECT_EQ(CountVerdicts(run, "; fix: unset CUDA_DEVICE_MAX_CONNECTIONS"), 1);
  for (int r = 0; r < c.nranks; ++r) {
    EXPECT_THAT(run[r].err, HasSubstr("CUDA_DEVICE_MAX_CONNECTIONS=1"));
    std::string path = trace;
    path.replace(path.find("%r"), 2, std::to_string(r));
    EXPECT_EQ(CheckTrace(path, run[r].out, "one queue").gated, 0);
  }
}

TEST_F(GatingTest, ExcludedRolesAreNotGated) {
  const Workload c{24, 2, 8};
  const std::vector<ProcessResult> off = RunRanks(c, "off", "");
  const std::string trace = dir_ + "/excl.%r.json";
  const std::vector<ProcessResult> run = RunRanks(
      c, "schedule", trace,
      {{"TRIRACE_EXCLUDE_ROLES", "unknown,data-parallel,pipeline,expert,tensor"}, {"TRIRACE_POLICY", "adversarial"}});
  ExpectSameResults(off, run, "all roles excluded");
  for (int r = 0; r < c.nranks; ++r) {
    std::string path = trace;
    path.replace(path.find("%r"), 2, std::to_string(r));
    EXPECT_EQ(CheckTrace(path, run[r].out, "excluded").gated, 0);
  }
}

// examples/hybrid_parallel as 4 processes under every policy: the same
// checksum as without the shim, and no hang.
TEST_F(GatingTest, HybridExampleUnderEveryPolicyMatchesModeOff) {
  const std::string launch = HYBRID_LAUNCH;
  if (launch.empty() || std::string(NET_PLUGIN).empty()) GTEST_SKIP() << "examples/hybrid_parallel is not built";
  static const std::regex kChecksum("\"checksum\":\"([0-9a-f]{16})\"");
  int run_index = 0;
  auto run = [&](const std::string& mode, const std::string& policy, const std::vector<std::string>& model) {
    // model[0] is the rank count, the rest the example's flags.
    std::vector<std::string> argv = {launch, "-n", model[0], "--timeout", "60", "--", HYBRID_BIN, "--timeout", "50",
                                     "--preset", "tiny"};
    argv.insert(argv.end(), model.begin() + 1, model.end());
    std::vector<std::pair<std::string, std::string>> env = {
        {"TRIRACE_NET_IFNAME", "lo"},
        {"NCCL_NET_PLUGIN", NET_PLUGIN},
        {"TRIRACE_JOB_ID", "gating-" + std::to_string(getpid()) + "-" + std::to_string(run_index++)},
        {"LD_PRELOAD", SHIM_PATH},
        {"TRIRACE_MODE", mode},
        {"TRIRACE_POLICY", policy},
        {"TRIRACE_MAX_HOLD_US", std::to_string(kHoldUs)},
        {"TRIRACE_CHUNK_BYTES", "65536"}};
    ProcessResult p = testing_support::RunProcess(argv, env, {"RANK", "WORLD_SIZE", "RENDEZVOUS_FILE"}, 80000);
    EXPECT_FALSE(p.timed_out) << mode << " " << policy << " hung";
    EXPECT_EQ(p.exit_code, 0) << mode << " " << policy << "\n" << p.err;
    std::smatch m;
    return std::regex_search(p.out, m, kChecksum) ? std::string(m[1]) : std::string();
  };
  const std::vector<std::vector<std::string>> models = {
      {"4", "--schedule", "1f1b", "--stages", "2", "--replicas", "2"},
      {"4", "--schedule", "2bw", "--order", "pp-inner", "--stages", "2", "--replicas", "2"},
      {"4", "--schedule", "2bw", "--embedding", "--stages", "1", "--replicas", "2"},
      {"8", "--schedule", "1f1b", "--stages", "4", "--replicas", "2"},
  };
  for (const std::vector<std::string>& model : models) {
    std::string name;
    for (const std::string& f : model) name += f + " ";
    const std::string expected = run("off", "fifo", model);
    ASSERT_FALSE(expected.empty()) << name << ": no checksum without the shim";
    for (const std::string policy : {"fifo", "priority", "trirace", "adversarial"}) {
      EXPECT_EQ(run("schedule", policy, model), expected) << policy << ": " << name;
    }
  }
}

// A comm's lane on hostccl's device, for the gate ring and watchdog tests
// (skipped when hostccl is not built).
class LaneOnHostccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
    void* h = dlopen(HOSTCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    absl::StatusOr<std::unique_ptr<device::Device>> dev = device::OpenHostDevice(h);
    ASSERT_TRUE(dev.ok()) << dev.status();
    dev_ = *std::move(dev);
    absl::StatusOr<std::unique_ptr<CommLane>> lane = CommLane::Create(*dev_, &comm_);
    ASSERT_TRUE(lane.ok()) << lane.status();
    lane_ = *std::move(lane);
  }

  // A gated ticket of lane_ with a gate of its own, released, done and
  // completed: only the watchdog's arrival is missing, which frees it.
  GateTicket* NewTicketAwaitingTheWatchdog() {
    auto* t = new GateTicket;
    t->lane = lane_.get();
    t->gated = true;
    t->lane->TicketMade();
    absl::MutexLock hold(&lane_->mu);  // AcquireGate's contract
    EXPECT_TRUE(lane_->AcquireGate(&t->slot, &t->value));
    t->arrived.store(GateTicket::kReleased | GateTicket::kDone | GateTicket::kCompleted);
    return t;
  }

  std::unique_ptr<device::Device> dev_;
  CommState comm_;
  std::unique_ptr<CommLane> lane_;
};
using GateRing = LaneOnHostccl;
using Watchdog = LaneOnHostccl;

TEST_F(GateRing, WordsOnlyGrowAndASlotIsReusedOnlyOnceOpen) {
  CommLane& l = *lane_;
  absl::MutexLock hold(&l.mu);  // AcquireGate's contract (the issue path holds it)
  std::vector<std::pair<uint32_t, uint32_t>> uses;
  for (size_t i = 0; i < CommLane::kGateSlots; ++i) {
    uint32_t slot = 0, value = 0;
    ASSERT_TRUE(l.AcquireGate(&slot, &value));
    EXPECT_EQ(slot, i);
    EXPECT_EQ(value, 1u);
    uses.push_back({slot, value});
  }
  uint32_t slot = 0, value = 0;
  EXPECT_FALSE(l.AcquireGate(&slot, &value)) << "slot 0's first use is still closed";
  EXPECT_TRUE(OpenGateWord(l.gates(), 0, 1));
  EXPECT_FALSE(OpenGateWord(l.gates(), 0, 1)) << "already open";
  ASSERT_TRUE(l.AcquireGate(&slot, &value));
  EXPECT_EQ(slot, 0u);
  EXPECT_EQ(value, 2u);
  EXPECT_TRUE(OpenGateWord(l.gates(), 0, 2));
  EXPECT_FALSE(OpenGateWord(l.gates(), 0, 1)) << "a late open of the older use must not lower the word";
  EXPECT_TRUE(GateWordOpen(l.gates(), 0, 2));
}

// A destroyed comm's ring goes to the next comm's lane (freeing page-locked
// memory on CUDA waits for the device): zeroed, so its gates close again.
TEST_F(GateRing, AFreedLanesRingServesTheNextLaneAsNew) {
  {
    absl::MutexLock hold(&lane_->mu);
    for (uint32_t i = 0; i < 5; ++i) {
      uint32_t slot = 0, value = 0;
      ASSERT_TRUE(lane_->AcquireGate(&slot, &value));
      EXPECT_TRUE(OpenGateWord(lane_->gates(), slot, value));
    }
  }
  ASSERT_TRUE(lane_->Idle());
  const device::GateBlock* ring = &lane_->gates();
  std::unique_ptr<device::GateBlock> gates = lane_->TakeGates();
  lane_.reset();
  ASSERT_EQ(gates.get(), ring);
  CommState next_comm;
  auto next = CommLane::Create(*dev_, &next_comm, std::move(gates));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(&(*next)->gates(), ring) << "the ring was not reused";
  absl::MutexLock hold(&(*next)->mu);
  uint32_t slot = 0, value = 0;
  ASSERT_TRUE((*next)->AcquireGate(&slot, &value));
  EXPECT_EQ(slot, 0u);
  EXPECT_EQ(value, 1u);
  EXPECT_FALSE(GateWordOpen((*next)->gates(), slot, value)) << "a reused gate starts open";
}

// A retired lane is freed by the watchdog only once its last ticket is gone.
TEST_F(Watchdog, FreesARetiredLaneOnceItsLastTicketIsGone) {
  absl::Notification freed;
  GateWatchdog watchdog(20'000'000, [](GateTicket*) {}, [&](std::unique_ptr<CommLane> l) {
    l.reset();
    freed.Notify();
  });
  ASSERT_TRUE(watchdog.Start().ok());
  watchdog.AddLane(lane_.get());
  auto* t = new GateTicket;
  t->lane = lane_.get();
  t->lane->TicketMade();
  watchdog.Retire(std::move(lane_));
  EXPECT_EQ(watchdog.retiring(), 1u);
  EXPECT_FALSE(freed.WaitForNotificationWithTimeout(absl::Milliseconds(5 * GateWatchdog::kRetirePollNs / 1'000'000)))
      << "freed with a ticket alive";
  // Its three arrivals free the ticket; the last lets go of the lane.
  t->arrived.store(GateTicket::kReleased | GateTicket::kDone | GateTicket::kCompleted);
  Arrive(t, GateTicket::kWatched);
  EXPECT_TRUE(freed.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(watchdog.retiring(), 0u);
  EXPECT_EQ(watchdog.lanes_freed(), 1u);
  watchdog.Stop();
}

// A stopped watchdog keeps no ticket: those it still watched, and those
// watched after it stopped, get its arrival (the launcher's shutdown opens
// their gates), so each is freed by its last other arrival.
TEST_F(Watchdog, StopGivesUpEveryTicketItStillWatches) {
  constexpr int64_t kBoundNs = 60'000'000'000;  // no deadline passes during the test
  std::atomic<int> expired{0};
  GateWatchdog watchdog(kBoundNs, [&](GateTicket*) { ++expired; });
  ASSERT_TRUE(watchdog.Start().ok());
  watchdog.AddLane(lane_.get());
  watchdog.Watch(lane_.get(), NewTicketAwaitingTheWatchdog(), MonotonicNs(), kBoundNs);
  watchdog.Watch(lane_.get(), NewTicketAwaitingTheWatchdog(), MonotonicNs(), kBoundNs);
  EXPECT_FALSE(lane_->Idle()) << "freed before the watchdog was done with them";
  watchdog.Stop();
  EXPECT_TRUE(lane_->Idle()) << "a stopped watchdog kept tickets it will never sweep";
  watchdog.Watch(lane_.get(), NewTicketAwaitingTheWatchdog(), MonotonicNs(), kBoundNs);
  EXPECT_TRUE(lane_->Idle()) << "a ticket watched after Stop() was kept";
  EXPECT_EQ(expired.load(), 0) << "no deadline had passed";
  EXPECT_EQ(watchdog.opened(), 0u);
}

// The watchdog alone (no engine ever releases anything) opens a gate a
// stream is blocked on, and stamps it as released at the bound.
TEST_F(Watchdog, OpensAGateTheEngineNeverOpens) {
  constexpr int64_t kBoundNs = 20'000'000;
  std::atomic<int> expired{0};
  GateWatchdog watchdog(kBoundNs, [&](GateTicket* t) {
    t->release_ns.store(MonotonicNs());
    ++expired;
  });
  ASSERT_TRUE(watchdog.Start().ok());
  watchdog.AddLane(lane_.get());

  GateTicket* t = NewTicketAwaitingTheWatchdog();
  absl::Notification passed;
  ASSERT_TRUE(dev_->WaitGate(lane_->stream(), lane_->gates(), t->slot, t->value).ok());
  ASSERT_TRUE(
      dev_->LaunchHostFunc(lane_->stream(), [](void* n) { static_cast<absl::Notification*>(n)->Notify(); }, &passed)
          .ok());
  const int64_t call = MonotonicNs();
  watchdog.Watch(lane_.get(), t, call, kBoundNs);
  ASSERT_TRUE(passed.WaitForNotificationWithTimeout(absl::Seconds(30))) << "the gate never opened";
  const int64_t waited = MonotonicNs() - call;
  EXPECT_EQ(expired.load(), 1);
  EXPECT_EQ(watchdog.opened(), 1u);
  EXPECT_GE(waited, kBoundNs - kBoundNs / 16) << "opened before its deadline";
  watchdog.Stop();
  EXPECT_TRUE(lane_->Idle()) << "the ticket was not freed";
}

TEST(ExcludedRoles, ParsesRoleNamesAndReportsUnknownOnes) {
  std::string bad;
  const uint32_t mask = ParseExcludedRoles(" pipeline, expert ,bogus", &bad);
  EXPECT_EQ(mask, (1u << TRIRACE_ROLE_PIPELINE) | (1u << TRIRACE_ROLE_EXPERT));
  EXPECT_EQ(bad, "bogus");
  bad.clear();
  EXPECT_EQ(ParseExcludedRoles("", &bad), 0u);
  EXPECT_EQ(bad, "");
}

}  // namespace
}  // namespace trirace::interpose::testing
