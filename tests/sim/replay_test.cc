// Workloads replayed from the shim's traces (sim/workloads/replay.h): the
// op sequence and its gaps as compute, comms matched across files by id,
// a schedule mode's chunks merged, and missing or foreign files named.
#include "sim/workloads/replay.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim_test_util.h"
#include "support/subprocess.h"

namespace trirace::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// One rank's trace as the shim writes it: `ops` are its op events (ts and
// dur in us), then the comm's description in otherData.
void WriteTrace(const fs::path& dir, int rank, const std::string& ops, int comm_rank = -1) {
  std::ofstream f(dir / absl::StrCat("trace.", rank, ".json"));
  f << "{\"traceEvents\":[\n" << ops
    << (ops.empty() ? "" : ",\n")
    << absl::StrCat("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"rank ", rank,
                    " host:1\"}}")
    << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"comm 1\":\"id=00000000000000ab rank="
    << (comm_rank < 0 ? rank : comm_rank) << "/2 role=data-parallel (annotated) parent=none created_by=InitRank\"}}\n";
}

std::string AllReduce(double ts_us, double dur_us, uint64_t bytes, int chunk = -1, int chunks = -1) {
  std::string e = absl::StrCat("{\"name\":\"AllReduce\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":", ts_us, ",\"dur\":", dur_us,
                               ",\"pid\":1,\"tid\":16,\"args\":{\"func\":\"AllReduce\",\"bytes\":", bytes,
                               ",\"class\":\"DENSE\"");
  if (chunk >= 0) absl::StrAppend(&e, ",\"chunk\":", chunk, ",\"chunks\":", chunks);
  return e + "}}";
}

std::string Mark(double ts_us, int iteration) {
  return absl::StrCat("{\"name\":\"iteration ", iteration, " begin\",\"cat\":\"iteration\",\"ph\":\"i\",\"s\":\"p\",\"ts\":",
                      ts_us, ",\"pid\":1,\"tid\":0,\"args\":{\"iteration\":", iteration, "}}");
}

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing_support::MakeTempDir("trirace-replay-"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ReplayTest, TheGapsBetweenOpsBecomeComputeAndTheOpsRunOnTheCluster) {
  // Two ranks: iteration marks at 0 and 10 ms; an all-reduce of 1 MB called
  // at 2 ms (measured 1 ms) and at 12 ms. At 8 Gbit/s (1 GB/s) the ring of
  // two moves 1 MB each way: 1 ms. The second call came 9 ms after the
  // first ended: compute of 9 ms.
  for (int r = 0; r < 2; ++r) {
    WriteTrace(dir_, r,
               absl::StrCat(Mark(0, 0), ",\n", AllReduce(2000, 1000, 1000000), ",\n", Mark(10000, 1), ",\n",
                            AllReduce(12000, 1000, 1000000)));
  }
  absl::StatusOr<Workload> w = ReplayWorkload(dir_.string());
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->ranks.size(), 2u);
  ASSERT_EQ(w->comms.size(), 1u);
  EXPECT_EQ(w->comms[0].traffic_class, TrafficClass::kDense);
  EXPECT_EQ(w->iterations, 2);
  const ModeResult r = testing::RunMode(testing::ExactBed(2, 1, 8), *w, Mode::kOff);
  // Iteration 0: 2 ms of compute, the all-reduce (1 ms), 7 ms to the next
  // mark; iteration 1: 2 ms, 1 ms.
  ASSERT_EQ(r.iteration_ms.size(), 2u);
  EXPECT_NEAR(r.iteration_ms[0], 10.0, 1e-6);
  EXPECT_NEAR(r.iteration_ms[1], 3.0, 1e-6);
  // On a link ten times slower the all-reduce takes 10 ms, and what came
  // after it in the trace waits.
  const ModeResult slow = testing::RunMode(testing::ExactBed(2, 1, 0.8), *w, Mode::kOff);
  EXPECT_NEAR(slow.iteration_ms[0] + slow.iteration_ms[1], 2 + 10 + 9 + 10, 1e-6);
}

// Real traces: examples/hybrid_parallel's `tiny` preset in schedule mode
// (trirace) on 2 test-bed hosts of 2 ranks (bench/e2e/run_e2e.sh --trace).
TEST(ReplayRealTraceTest, TheShimsTracesReplayOnTheirCluster) {
  absl::StatusOr<Workload> w = ReplayWorkload(SIM_TEST_DATA "/replay-tiny");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->ranks.size(), 4u);
  EXPECT_EQ(w->iterations, 4);
  int dense = 0, pipelines = 0;
  for (const CommSpec& c : w->comms) {
    dense += c.traffic_class == TrafficClass::kDense;
    pipelines += c.pipeline;
  }
  EXPECT_EQ(dense, 2);      // each stage's data-parallel comm
  EXPECT_EQ(pipelines, 2);  // each replica's pipeline
  ClusterOptions o;
  o.hosts = 2;
  absl::StatusOr<Cluster> bed = MakeCluster("testbed", o);
  ASSERT_TRUE(bed.ok());
  for (Mode m : {Mode::kOff, Mode::kTrirace}) {
    const ModeResult r = testing::RunMode(*bed, *w, m);
    EXPECT_GT(r.iteration_ms_median, 1.0) << ModeName(m);
  }
}

TEST_F(ReplayTest, AScheduleModesChunksAreOneCallAgain) {
  for (int r = 0; r < 2; ++r) {
    WriteTrace(dir_, r, absl::StrCat(AllReduce(0, 500, 600000, 0, 2), ",\n", AllReduce(0, 900, 400000, 1, 2)));
  }
  absl::StatusOr<Workload> w = ReplayWorkload(dir_.string());
  ASSERT_TRUE(w.ok()) << w.status();
  int calls = 0;
  for (const NcclCall& c : w->ranks[0].calls) {
    ++calls;
    EXPECT_EQ(c.bytes, 1000000u);
  }
  EXPECT_EQ(calls, 1);
}

TEST_F(ReplayTest, WhatIsMissingOrForeignIsNamed) {
  absl::StatusOr<Workload> w = ReplayWorkload((dir_ / "none").string());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("not a folder"));
  w = ReplayWorkload(dir_.string());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("no *.json trace files"));
  // Rank 1's trace says it is comm rank 1 of 2, but rank 0's is missing.
  WriteTrace(dir_, 1, AllReduce(0, 1, 8), 1);
  std::ofstream(dir_ / "trace.1.json", std::ios::app);
  fs::rename(dir_ / "trace.1.json", dir_ / "trace.0.json");
  WriteTrace(dir_, 0, AllReduce(0, 1, 8), 1);  // both say comm rank 1
  w = ReplayWorkload(dir_.string());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("has no trace in the folder"));
  std::ofstream(dir_ / "trace.0.json") << "not json";
  w = ReplayWorkload(dir_.string());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("not a TriRace trace"));
}

// ---- What replay_fuzz found (tests/fuzz/corpus/replay_fuzz/crash-*) ----

// One rank's trace of `events` (one per line, from line 2) with otherData
// `comms` ("comm <index>": description).
void WriteRaw(const fs::path& dir, int rank, const std::vector<std::string>& events, const std::string& comms) {
  std::ofstream f(dir / absl::StrCat("trace.", rank, ".json"));
  f << "{\"traceEvents\":[\n";
  for (const std::string& e : events) f << e << ",\n";
  f << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"rank " << rank
    << " host:1\"}}\n],\"otherData\":{" << comms << "}}\n";
}

std::string Comm(int rank, const std::string& of) {
  return absl::StrCat("\"comm 1\":\"id=ab rank=", rank, "/", of, " role=data-parallel\"");
}

std::string Op(const std::string& func, const std::string& ts, const std::string& args) {
  return absl::StrCat("{\"name\":\"", func, "\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":", ts,
                      ",\"dur\":5,\"pid\":1,\"tid\":16,\"args\":{\"func\":\"", func, "\"", args, "}}");
}

TEST_F(ReplayTest, BadValuesAreErrorsNamingTheFileTheLineAndWhatWasExpected) {
  struct Bad {
    std::vector<std::string> events;  // of rank 0, whose comm 1 is rank 0 of 1
    std::string comms;
    std::string message;  // after "--replay <dir>/trace.0.json"
  };
  const std::vector<Bad> cases = {
      // Before: a std::length_error out of ReplayWorkload (a vector of -1 ranks).
      {{Op("AllReduce", "10", ",\"bytes\":8")}, Comm(0, "-1"),
       ": otherData \"comm 1\": no rank=<r>/<n> with 0 <= r < n, expected id=<comm id> rank=<r>/<n> role=<role>"},
      {{Op("AllReduce", "10", ",\"bytes\":8")}, Comm(0, "99999999999"), ": otherData \"comm 1\": no rank=<r>/<n>..."},
      {{Op("AllReduce", "10", ",\"bytes\":8")}, "\"comm 1\":\"rank=0/1\"",
       ": otherData \"comm 1\": no id=, expected id=<comm id> rank=<r>/<n> role=<role>"},
      // Before: undefined behaviour (a double outside int64_t made one).
      {{Op("AllReduce", "1e300", ",\"bytes\":8")}, Comm(0, "1"),
       ":2: traceEvents[0] (AllReduce): ts is 1e+300, expected microseconds in 0..4e+15"},
      {{"{\"name\":\"x\",\"ph\":\"M\"}", Op("AllReduce", "-1", ",\"bytes\":8")}, Comm(0, "1"),
       ":3: traceEvents[1] (AllReduce): ts is -1, expected microseconds in 0..4e+15"},
      {{Op("AllReduce", "10", ",\"bytes\":\"many\"")}, Comm(0, "1"),
       ":2: traceEvents[0] (AllReduce): bytes is \"many\", expected an integer in 0..281474976710656"},
      {{Op("AllReduce", "10", ",\"bytes\":8,\"tag\":{\"stage\":1e99}")}, Comm(0, "1"),
       ":2: traceEvents[0] (AllReduce): tag: stage is 1e+99, expected an integer in -2147483648..2147483647"},
      {{Op("AllReduce", "10", ",\"bytes\":8,\"chunk\":2,\"chunks\":2")}, Comm(0, "1"),
       ":2: traceEvents[0] (AllReduce): chunk 2 of 2, expected both, with chunk < chunks"},
      {{Op("Recv", "10", ",\"bytes\":8")}, Comm(0, "1"), ":2: traceEvents[0] (Recv): no peer, expected the peer's comm rank"},
      {{Op("AllReduce", "10", ",\"bytes\":8")}, "", ":2: traceEvents[0] (AllReduce): an op on comm index 1 (tid / 16)..."},
      // Before: accepted, and the workload failed ValidateWorkload later.
      {{Op("Send", "10", ",\"bytes\":8,\"peer\":5")}, Comm(0, "1"),
       ":2: traceEvents[0] (Send): peer 5 on comm ab of 1 ranks (this trace is rank 0), expected another rank of the comm"},
      {{Op("Send", "10", ",\"bytes\":8,\"peer\":0")}, Comm(0, "1"), ":2: traceEvents[0] (Send): peer 0 on comm ab..."},
      {{Op("Broadcast", "10", ",\"bytes\":8,\"root\":1")}, Comm(0, "1"),
       ":2: traceEvents[0] (Broadcast): root 1 on comm ab of 1 ranks (this trace is rank 0), expected a rank of the comm"},
      {{"{\"traceEvents\":"}, Comm(0, "1"), ":2: not a TriRace trace, not JSON (syntax error..."},
      // Found by replay_fuzz (corpus/replay_fuzz/crash-number-overflow): a
      // number too large for a double threw out of ReplayWorkload.
      {{Op("AllReduce", "17e966012", ",\"bytes\":8")}, Comm(0, "1"),
       ": not a TriRace trace, not JSON (number overflow parsing '17e966012'), expected the shim's trace "
       "(TRIRACE_TRACE)"},
  };
  for (const Bad& b : cases) {
    WriteRaw(dir_, 0, b.events, b.comms);
    const absl::StatusOr<Workload> w = ReplayWorkload(dir_.string());
    ASSERT_FALSE(w.ok()) << b.message;
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << w.status();
    const std::string want = absl::StrCat("--replay ", (dir_ / "trace.0.json").string(), b.message);
    if (absl::EndsWith(want, "...")) {
      EXPECT_THAT(std::string(w.status().message()), ::testing::StartsWith(want.substr(0, want.size() - 3)));
    } else {
      EXPECT_EQ(w.status().message(), want);
    }
  }
}

TEST_F(ReplayTest, EachCommRankIsOneTraceAndEveryTraceTheSameSize) {
  // Before: two traces both rank 0 of a comm of 2 gave "rank 1 has no trace".
  WriteRaw(dir_, 0, {Op("AllReduce", "10", ",\"bytes\":8")}, Comm(0, "2"));
  WriteRaw(dir_, 1, {Op("AllReduce", "10", ",\"bytes\":8")}, Comm(0, "2"));
  absl::StatusOr<Workload> w = ReplayWorkload(dir_.string());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(),
            absl::StrCat("--replay ", (dir_ / "trace.1.json").string(), ": otherData \"comm 1\": rank 0 of comm ab, ",
                         "which rank 0's trace is too, expected each comm rank in one trace"));
  WriteRaw(dir_, 1, {Op("AllReduce", "10", ",\"bytes\":8")}, Comm(1, "3"));
  w = ReplayWorkload(dir_.string());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("comm ab of 3 ranks but the folder holds 2 traces"));
  WriteRaw(dir_, 0, {Op("AllReduce", "10", ",\"bytes\":8")}, Comm(0, "1"));
  WriteRaw(dir_, 1, {Op("AllReduce", "10", ",\"bytes\":8")}, Comm(0, "2"));
  w = ReplayWorkload(dir_.string());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("comm ab of 2 ranks, but "));
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("says 1, expected the same in every trace"));
  // Ranks 0 and 1 of 2, each once: accepted, and a sane program.
  WriteRaw(dir_, 0, {Op("Send", "10", ",\"bytes\":8,\"peer\":1")}, Comm(0, "2"));
  WriteRaw(dir_, 1, {Op("Recv", "10", ",\"bytes\":8,\"peer\":0")}, Comm(1, "2"));
  w = ReplayWorkload(dir_.string());
  ASSERT_TRUE(w.ok()) << w.status();
  std::string error;
  EXPECT_TRUE(ValidateWorkload(*w, &error)) << error;
}

}  // namespace
}  // namespace trirace::sim
