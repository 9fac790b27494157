// Bad input to the NCCL API through the shim (issue #41; docs/reliability.md,
// "Faults and bad input"): ranks of tests/interpose/bad_calls.cc as
// processes over hostccl, under TRIRACE_MODE=schedule with each policy,
// compared with the same ranks under TRIRACE_MODE=off. For every bad call:
// an error return code (the one hostccl gives without the shim), exactly
// one WARN line, which names the argument and its value; afterwards, valid
// calls on the same comm give the right results; no rank crashes or hangs.
//
// What the real NCCL does with the same input, where the shim has to step in
// (the shim refuses these itself; hostccl would not crash, NCCL would):
//   - a destroyed or garbage comm: NCCL's CommCheck reads comm->startMagic
//     through the pointer: a garbage one is a SIGSEGV, a destroyed one is
//     freed memory (ShimBadInputRealNcclTest below shows the SIGSEGV);
//   - a count whose bytes overflow size_t: NCCL computes count * element
//     size without a check and sizes its work with the wrapped number.
// The rest NCCL checks itself and answers ncclInvalidArgument with a WARN
// (unknown datatype or op, peer or root out of range), which the shim
// passes on unchanged; a foreign stream reaches CUDA, which reports it.
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rank_launcher.h"
#include "support/subprocess.h"
#include "trace_file.h"

namespace trirace::interpose::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::MakeTempDir;
using testing_support::ProcessResult;

const std::vector<std::string> kUnset = {"LD_PRELOAD",
                                         "TRIRACE_MODE",
                                         "TRIRACE_TRACE",
                                         "TRIRACE_NCCL_LIBRARY",
                                         "TRIRACE_DEBUG",
                                         "TRIRACE_DEBUG_FILE",
                                         "NCCL_NET_PLUGIN",
                                         "TRIRACE_POLICY",
                                         "TRIRACE_MAX_HOLD_US",
                                         "TRIRACE_CHUNK_BYTES",
                                         "TRIRACE_EXCLUDE_ROLES",
                                         "CUDA_DEVICE_MAX_CONNECTIONS",
                                         "TRIRACE_PRIORITY_WINDOW_BYTES",
                                         "TRIRACE_DENSE_WINDOW_BYTES",
                                         "TRIRACE_DENSE_CREDIT_BYTES",
                                         "TRIRACE_NET_CLASS_PRIORITY"};

constexpr int kRanks = 2;
constexpr int kTimeoutMs = 60000;

// What one rank said, parsed.
struct Rank {
  ProcessResult result;
  std::map<std::string, int> rc;                       // "bad <label> rc=<n>"
  std::map<std::string, std::vector<std::string>> warns;  // WARN lines after "mark <label>", up to the next mark
  std::vector<std::string> valid;                      // "valid ..." lines
};

Rank Parse(ProcessResult r) {
  Rank rank;
  std::istringstream out(r.out);
  const std::regex bad(R"(^bad (\S+) rc=(-?\d+)$)");
  for (std::string line; std::getline(out, line);) {
    std::smatch m;
    if (std::regex_match(line, m, bad)) rank.rc[m[1]] = std::stoi(m[2]);
    if (line.rfind("valid ", 0) == 0) rank.valid.push_back(line);
  }
  std::istringstream err(r.err);
  std::string label;
  for (std::string line; std::getline(err, line);) {
    if (line.rfind("mark ", 0) == 0) {
      label = line.substr(5);
      rank.warns[label];
    } else if (!label.empty() && line.find(" TriRace WARN ") != std::string::npos) {
      rank.warns[label].push_back(line);
    }
  }
  rank.result = std::move(r);
  return rank;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n    " + l;
  return s;
}

class ShimBadInputTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
    dir_ = MakeTempDir("trirace-bad-input");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // bad_calls --case `which` on kRanks ranks; mode "off" or "schedule"
  // (with this test's policy); `env` on top.
  std::vector<Rank> Run(const std::string& which, const std::string& mode,
                        std::vector<std::pair<std::string, std::string>> env = {}) {
    RankJob job;
    job.nranks = kRanks;
    job.argv = [&](int rank) {
      return std::vector<std::string>{BAD_CALLS, "--lib", HOSTCCL_LIBRARY, "--rank", std::to_string(rank),
                                      "--nranks", std::to_string(kRanks), "--case", which};
    };
    env.push_back({"LD_PRELOAD", SHIM_PATH});
    env.push_back({"TRIRACE_MODE", mode});
    env.push_back({"TRIRACE_POLICY", GetParam()});
    env.push_back({"TRIRACE_CHUNK_BYTES", "4096"});  // the valid 64 KiB all-reduce is split
    env.push_back({"TRIRACE_DEBUG", "WARN"});
    job.set_env = env;
    job.unset_env = kUnset;
    job.timeout_ms = kTimeoutMs;
    std::vector<Rank> ranks;
    for (ProcessResult& r : LaunchRanks(job)) ranks.push_back(Parse(std::move(r)));
    return ranks;
  }

  // Every rank exited 0, in time, and every valid call after the bad ones
  // gave the right result.
  void ExpectCleanRun(const std::vector<Rank>& ranks, const std::string& what, bool valid_calls = true) {
    ASSERT_EQ(ranks.size(), static_cast<size_t>(kRanks));
    for (size_t r = 0; r < ranks.size(); ++r) {
      const ProcessResult& p = ranks[r].result;
      ASSERT_FALSE(p.timed_out) << what << ": rank " << r << " hung:\n" << p.out << p.err;
      ASSERT_EQ(p.exit_code, 0) << what << ": rank " << r << " (128 + signal when killed):\n" << p.out << p.err;
      EXPECT_THAT(p.out, HasSubstr("\ndone\n")) << what << ": rank " << r;
      EXPECT_NE(ranks[r].valid.empty(), valid_calls) << what;
      for (const std::string& v : ranks[r].valid) EXPECT_THAT(v, HasSubstr(" ok=1")) << what << ": rank " << r;
    }
  }

  // What the bad calls whose label starts with `prefix` must log: `lines`
  // WARN lines, the first holding every text in `texts`.
  struct Expect {
    std::string prefix;
    std::vector<std::string> texts;
    size_t lines = 1;
  };

  // Each bad call of `off` (hostccl alone) gave the same return code under
  // the shim, an error, and logged what `expect` says (the first entry
  // whose prefix matches; a label no entry matches needs only the code).
  void ExpectWarnings(const std::vector<Rank>& off, const std::vector<Rank>& run, const std::vector<Expect>& expect) {
    for (size_t r = 0; r < run.size(); ++r) {
      ASSERT_FALSE(run[r].rc.empty()) << "rank " << r << " made no bad call:\n" << run[r].result.out;
      EXPECT_EQ(run[r].rc, off[r].rc) << "rank " << r << ": return codes differ from TRIRACE_MODE=off";
      for (const auto& [label, rc] : run[r].rc) {
        EXPECT_NE(rc, 0) << label << " was accepted";
        for (const Expect& e : expect) {
          if (label.rfind(e.prefix, 0) != 0) continue;
          const std::vector<std::string>& lines = run[r].warns.at(label);
          ASSERT_EQ(lines.size(), e.lines) << "rank " << r << " " << label << ": WARN lines:" << Joined(lines);
          for (const std::string& text : e.texts) EXPECT_THAT(lines[0], HasSubstr(text)) << label;
          break;
        }
      }
    }
  }

  std::string dir_;
};

// The real NCCL would read through these comms (see the file comment); the
// shim refuses them from its ledger of created comms without reading them:
// one of them is in a page that cannot be read, so a read would kill the rank.
TEST_P(ShimBadInputTest, DestroyedAndGarbageCommsAreRefusedWithoutBeingRead) {
  const std::vector<Rank> off = Run("comm", "off");
  const std::vector<Rank> run = Run("comm", "schedule");
  ExpectCleanRun(off, "off");
  ExpectCleanRun(run, "schedule");
  if (HasFailure()) return;
  // Inside a group NCCL gets the call with comm=NULL and says so itself (a
  // second line), so that it fails the group; its end reports that as
  // without the shim. trirace_set_comm_role answers TRIRACE_ERR_INVALID (2),
  // in mode off too (the shim is preloaded there, only forwarding NCCL).
  ExpectWarnings(off, run,
                 {{"unreadable-role", {"INTERPOSE trirace_set_comm_role: comm 0x", "is not a communicator the shim"}},
                  {"junk-role", {"trirace_set_comm_role: comm 0x"}},
                  {"destroyed-allreduce", {"INTERPOSE ncclAllReduce: comm=0x", "was destroyed by ncclCommDestroy"}},
                  {"destroyed-send", {"ncclSend: comm=0x", "was destroyed"}},
                  {"destroyed-count", {"ncclCommCount: comm=0x", "was destroyed"}},
                  {"destroyed-destroy", {"ncclCommDestroy: comm=0x", "was destroyed"}},
                  {"unreadable-", {"INTERPOSE ", ": comm=0x", "is not a communicator", "accepted: a live"}},
                  {"junk-", {"INTERPOSE ", ": comm=0x", "is not a communicator"}},
                  {"group-junk-send", {"INTERPOSE ncclSend: comm=0x", "inside a group"}, 2},
                  {"group-junk-end", {"ncclGroupEnd"}}});
}

TEST_P(ShimBadInputTest, NullStreamsWorkAndForeignStreamsAreReportedOnceWithGatingKept) {
  const std::string trace = dir_ + "/stream.%r.json";
  const std::vector<Rank> off = Run("stream", "off");
  const std::vector<Rank> run = Run("stream", "schedule", {{"TRIRACE_TRACE", trace}});
  ExpectCleanRun(off, "off");
  ExpectCleanRun(run, "schedule");
  if (HasFailure()) return;
  ExpectWarnings(off, run, {{"foreign-", {"stream=0x", "is not a live hostccl stream"}},
                            {"destroyed-", {"stream=0x", "is not a live hostccl stream"}}});
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_THAT(run[r].result.err, Not(HasSubstr("gated launch is off")))
        << "a caller's bad stream is not the shim's failure";
    // The valid calls after the bad ones are still gated.
    std::string path = trace;
    path.replace(path.find("%r"), 2, std::to_string(r));
    TraceFile t;
    std::string error;
    ASSERT_TRUE(ReadTrace(path, &t, &error)) << error;
    std::vector<TraceOp> ops = OpsOfComm(t, 1);
    uint64_t last_bad = 0;
    for (const TraceOp& op : ops) {
      if (op.result != 0) last_bad = std::max(last_bad, op.seq);
    }
    ASSERT_GT(last_bad, 0u) << "the bad calls are not in the trace";
    int gated_after = 0;
    for (const TraceOp& op : ops) gated_after += op.seq > last_bad && op.args.contains("gate_wait_us") ? 1 : 0;
    EXPECT_GT(gated_after, 0) << "rank " << r << ": nothing was gated after the bad streams";
  }
}

// The gated launch used to split these into chunks that each fit, so the
// call "succeeded" and ran off the end of the caller's buffers.
TEST_P(ShimBadInputTest, CountsWhoseBytesOverflowAreRefused) {
  const std::vector<Rank> off = Run("count", "off");
  const std::vector<Rank> run = Run("count", "schedule");
  ExpectCleanRun(off, "off");
  ExpectCleanRun(run, "schedule");
  if (HasFailure()) return;
  ExpectWarnings(off, run,
                 {{"allreduce-int32", {"INTERPOSE ncclAllReduce: count=4611686018427387904 of int32",
                                       "more bytes than size_t holds", "accepted: count <= 4611686018427387903"}},
                  {"allreduce-float64", {"INTERPOSE ncclAllReduce: count=18446744073709551615 of float64"}},
                  {"broadcast-int64", {"INTERPOSE ncclBroadcast: count=", "of int64"}},
                  {"reduce-uint32", {"INTERPOSE ncclReduce: count=", "of uint32"}},
                  {"allgather-int8", {"INTERPOSE ncclAllGather: count=", "one part per rank of 2"}},
                  {"send-float64", {"INTERPOSE ncclSend: count=", "of float64"}},
                  {"group-allreduce-int32", {"INTERPOSE ncclAllReduce: count=", "inside a group"}, 2},
                  {"group-end", {"ncclGroupEnd"}}});
}

TEST_P(ShimBadInputTest, UnknownDatatypesAndOpsAreReportedOnce) {
  const std::vector<Rank> off = Run("type", "off");
  const std::vector<Rank> run = Run("type", "schedule");
  ExpectCleanRun(off, "off");
  ExpectCleanRun(run, "schedule");
  if (HasFailure()) return;
  ExpectWarnings(off, run, {{"allreduce-type99", {"ncclAllReduce: datatype=99"}},
                            {"broadcast-type-1", {"ncclBroadcast: datatype=-1"}},
                            {"send-type12", {"ncclSend: datatype=12"}},
                            {"allreduce-type-2147483648", {"datatype=-2147483648"}},
                            {"allreduce-op99", {"op=99"}},
                            {"allreduce-op-1", {"op=-1"}},
                            {"allreduce-op5", {"op=5"}},
                            {"allreduce-op2147483647", {"op=2147483647"}},
                            {"", {}}});  // every other label: one line too
  for (const Rank& r : run) EXPECT_THAT(Joined(r.valid), HasSubstr("valid premulsum ok=1"));
}

TEST_P(ShimBadInputTest, PeersAndRootsOutsideTheCommAreReportedOnce) {
  const std::vector<Rank> off = Run("peer", "off");
  const std::vector<Rank> run = Run("peer", "schedule");
  ExpectCleanRun(off, "off");
  ExpectCleanRun(run, "schedule");
  if (HasFailure()) return;
  ExpectWarnings(off, run, {{"send-peer-1", {"ncclSend: peer=-1 is out of range"}},
                            {"send-peer2147483647", {"peer=2147483647"}},
                            {"recv-peer2147483647", {"ncclRecv: peer=2147483647 is out of range"}},
                            {"recv-peer2", {"ncclRecv: peer=2 is out of range"}},
                            {"recv-peer-2147483648", {"peer=-2147483648"}},
                            {"broadcast-root", {"ncclBroadcast: root="}},
                            {"group-send-peer-1", {"peer=-1"}},
                            {"group-end", {"ncclGroupEnd: peer=-1"}},
                            {"", {}}});
}

// The refusals above must never hit a valid comm: every way of creating one
// (a split inside a group gets its comm written at the group's end, a
// nonblocking one while the caller polls).
TEST_P(ShimBadInputTest, CommsFromEveryCreationPathAreAccepted) {
  const std::vector<Rank> off = Run("create", "off");
  const std::vector<Rank> run = Run("create", "schedule");
  ExpectCleanRun(off, "off");
  ExpectCleanRun(run, "schedule");
  for (size_t r = 0; r < run.size(); ++r) {
    EXPECT_EQ(run[r].valid, off[r].valid) << "rank " << r;
    EXPECT_EQ(run[r].valid.size(), 7u) << Joined(run[r].valid);  // before, and one per created comm
    EXPECT_THAT(run[r].result.err, Not(HasSubstr("is not a communicator")));
    EXPECT_THAT(run[r].result.err, Not(HasSubstr("was destroyed")));
    EXPECT_THAT(run[r].result.out, HasSubstr("create shrink rc=5"));  // hostccl's own answer, passed on
  }
}

TEST_P(ShimBadInputTest, AGroupLeftOpenAtExitExitsWithOneWarning) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Rank> run = Run("group", "schedule");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t r = 0; r < run.size(); ++r) {
    const ProcessResult& p = run[r].result;
    ASSERT_FALSE(p.timed_out) << "rank " << r << " hung at exit:\n" << p.err;
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_THAT(p.out, HasSubstr("leaving the group open"));
    EXPECT_THAT(p.err, HasSubstr("exit with 1 NCCL group(s) still open (ncclGroupStart without its ncclGroupEnd): "
                                 "the 3 call(s) made in them never ran"));
    EXPECT_EQ(Count(p.err, " TriRace WARN "), 1) << p.err;
  }
  EXPECT_LT(seconds, 20) << "the exit waited for records that never end";
}

// ncclCommAbort while the scheduler holds chunks behind closed gates: with
// a window (and, for trirace, a credit beside the broadcast queued after
// them) of one chunk and no class marks on the wire, the priority and
// trirace policies hold every chunk after the first, which waits for a rank
// that never joins; the abort fails it, and the rest are released one by
// one and fail at once. fifo releases everything at once, so there the
// chunks wait on the stream instead.
TEST_P(ShimBadInputTest, AbortWithGatesClosedReturnsAndTheProcessExits) {
  const std::string trace = dir_ + "/abort.%r.json";
  const std::vector<Rank> run =
      Run("abort", "schedule",
          {{"TRIRACE_MAX_HOLD_US", "10000000"}, {"TRIRACE_PRIORITY_WINDOW_BYTES", "4096"},
           {"TRIRACE_DENSE_WINDOW_BYTES", "4096"}, {"TRIRACE_DENSE_CREDIT_BYTES", "4096"},
           {"TRIRACE_NET_CLASS_PRIORITY", "off"}, {"TRIRACE_TRACE", trace}});
  ExpectCleanRun(run, "schedule", /*valid_calls=*/false);
  if (HasFailure()) return;
  for (size_t r = 0; r < run.size(); ++r) {
    const std::string& out = run[r].result.out;
    const std::regex abort_line(R"(abort rc=0 ms=(\d+))"), sync_line(R"(sync after abort rc=\d+ ms=(\d+))");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, abort_line)) << out;
    EXPECT_LT(std::stoi(m[1]), 5000) << "the abort waited for the held chunks";
    ASSERT_TRUE(std::regex_search(out, m, sync_line)) << out;
    EXPECT_LT(std::stoi(m[1]), 5000) << "the stream stayed behind closed gates after the abort";
  }
  // Rank 0's trace: chunks that waited at their gate until the abort.
  std::string path = trace;
  path.replace(path.find("%r"), 2, "0");
  TraceFile t;
  std::string error;
  ASSERT_TRUE(ReadTrace(path, &t, &error)) << error;
  double longest_wait_us = 0;
  for (const TraceOp& op : t.ops) {
    if (op.args.contains("gate_wait_us")) {
      longest_wait_us = std::max(longest_wait_us, op.args["gate_wait_us"].get<double>());
    }
  }
  // fifo holds nothing; trirace may let the contended chunks go side by
  // side (its rule R10), so only priority is sure to hold one at the abort.
  if (GetParam() == "priority") {
    EXPECT_GT(longest_wait_us, 200000) << "no gate was still closed when the comm was aborted";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, ShimBadInputTest, ::testing::Values("fifo", "priority", "trirace"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// The real NCCL (installed, no GPU needed) given a comm it never made: it
// reads through the pointer and the process dies of SIGSEGV; with the shim
// (schedule mode falls back to observing without a GPU, and still checks)
// each call returns ncclInvalidArgument with one WARN.
TEST(ShimBadInputRealNcclTest, AGarbageCommIsRefusedWhereTheRealNcclWouldCrash) {
  const std::string lib = REAL_NCCL_LIBRARY;
  if (lib.empty() || !std::filesystem::exists(lib)) GTEST_SKIP() << "no real libnccl.so.2 at configure time";
  const std::vector<std::string> argv = {BAD_CALLS, "--lib", lib, "--rank", "0", "--nranks", "2", "--case", "real"};
  std::vector<std::string> unset = kUnset;
  const ProcessResult plain = testing_support::RunProcess(argv, {}, unset, kTimeoutMs);
  // SIGSEGV, or AddressSanitizer's report of it in a sanitized build.
  const bool crashed = plain.exit_code == 128 + SIGSEGV || plain.err.find("AddressSanitizer: SEGV") != std::string::npos;
  EXPECT_TRUE(crashed) << "the real NCCL no longer crashes on a garbage comm (exit " << plain.exit_code << "):\n"
                       << plain.out << plain.err;
  const ProcessResult shim = testing_support::RunProcess(
      argv, {{"LD_PRELOAD", SHIM_PATH}, {"TRIRACE_MODE", "schedule"}, {"TRIRACE_DEBUG", "WARN"}}, unset, kTimeoutMs);
  ASSERT_EQ(shim.exit_code, 0) << shim.out << shim.err;
  Rank parsed = Parse(shim);
  for (const char* label : {"real-count", "real-allreduce", "real-destroy"}) {
    EXPECT_EQ(parsed.rc[label], 4) << label;  // ncclInvalidArgument
    ASSERT_EQ(parsed.warns[label].size(), 1u) << label << Joined(parsed.warns[label]);
    EXPECT_THAT(parsed.warns[label][0], HasSubstr("is not a communicator"));
  }
}

}  // namespace
}  // namespace trirace::interpose::testing
