// `trirace sim`, run as a child process: the JSON contract, determinism,
// the trace it writes, and bad input named by flag.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "support/subprocess.h"

namespace trirace {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing_support::RunProcess;

std::vector<std::string> Sim(std::vector<std::string> args) {
  args.insert(args.begin(), {TRIRACE_EXE, "sim"});
  return args;
}

TEST(TriraceSimCliTest, AWorkloadPrintsEveryModeTheIdealAndTheBoundAsJson) {
  auto r = RunProcess(Sim({"--cluster", "testbed", "--preset", "contention", "--json", "--", "--iterations", "5"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* mode : {"off", "fifo", "priority", "wire", "gate", "trirace"}) {
    ASSERT_TRUE(j["modes"].contains(mode)) << mode;
    EXPECT_GT(j["modes"][mode]["iteration_ms"].get<double>(), 0) << mode;
  }
  EXPECT_GT(j["ideal_ms"].get<double>(), 0);
  EXPECT_GT(j["bound_ms"].get<double>(), 0);
  EXPECT_LE(j["bound_ms"].get<double>(), j["ideal_ms"].get<double>());
  EXPECT_NEAR(j["modes"]["off"]["speedup"].get<double>(), 1.0, 1e-9);
}

TEST(TriraceSimCliTest, TheQosIsEchoedAndMarksNothingHonoursGainNothing) {
  auto fabric = RunProcess(Sim({"--cluster", "testbed", "--preset", "contention", "--json", "--modes", "off,wire", "--",
                                "--iterations", "5"}));
  ASSERT_EQ(fabric.exit_code, 0) << fabric.err;
  const nlohmann::json jf = nlohmann::json::parse(fabric.out);
  EXPECT_EQ(jf["qos"], "fabric") << "the bed's own";
  EXPECT_THAT(jf["cluster"].get<std::string>(), HasSubstr("class queues: fabric"));
  EXPECT_GT(jf["modes"]["wire"]["speedup"].get<double>(), 1.0);
  auto none = RunProcess(Sim({"--cluster", "testbed", "--qos", "none", "--preset", "contention", "--json", "--modes",
                              "off,wire", "--", "--iterations", "5"}));
  ASSERT_EQ(none.exit_code, 0) << none.err;
  const nlohmann::json jn = nlohmann::json::parse(none.out);
  EXPECT_EQ(jn["qos"], "none");
  EXPECT_EQ(jn["modes"]["wire"]["speedup"].get<double>(), 1.0);
  EXPECT_EQ(jn["ideal_ms"], jf["ideal_ms"]) << "the ideal is strict priority everywhere, whatever the QoS";
}

TEST(TriraceSimCliTest, WithoutHostsTheClusterIsSizedFromTheLayout) {
  // 4 ranks of `tiny` on the bed's 2 a host; 64 GPUs on dgx-h100's 8.
  auto tiny = RunProcess(Sim({"--cluster", "testbed", "--preset", "tiny", "--modes", "off", "--json"}));
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_THAT(nlohmann::json::parse(tiny.out)["cluster"].get<std::string>(), HasSubstr("2 hosts x 2 ranks"));
  auto model = RunProcess(Sim({"--cluster", "dgx-h100", "--model", "gpt-1.3b", "--pp", "4", "--dp", "16",
                               "--iterations", "2", "--warmup", "1", "--modes", "off", "--json"}));
  ASSERT_EQ(model.exit_code, 0) << model.err;
  const nlohmann::json j = nlohmann::json::parse(model.out);
  EXPECT_THAT(j["cluster"].get<std::string>(), HasSubstr("8 hosts x 8 ranks"));
  EXPECT_EQ(j["ranks"], 64);
}

TEST(TriraceSimCliTest, ACollectivePrintsNcclTestsBandwidths) {
  auto r = RunProcess(Sim({"--cluster", "dgx-h100", "--hosts", "2", "--collective", "allreduce", "--bytes",
                           "1073741824", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const double t = j["time_us"], alg = j["algbw_GBps"], bus = j["busbw_GBps"];
  EXPECT_NEAR(alg, 1073741824.0 / (t * 1e-6) / 1e9, 1e-3 * alg);
  EXPECT_NEAR(bus, alg * 2 * 15 / 16, 1e-3 * bus);
}

TEST(TriraceSimCliTest, TheSameInputsPrintTheSameBytes) {
  const std::vector<std::string> args = Sim({"--cluster", "testbed", "--preset", "sparse", "--json", "--modes",
                                              "off,gate,trirace", "--", "--iterations", "5"});
  auto a = RunProcess(args), b = RunProcess(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(TriraceSimCliTest, TheTraceIsInTheShimsFormat) {
  const fs::path dir = testing_support::MakeTempDir("trirace-sim-trace-");
  const std::string path = (dir / "sim.json").string();
  auto r = RunProcess(Sim({"--cluster", "testbed", "--preset", "tiny", "--hosts", "2", "--ranks-per-host", "2",
                           "--modes", "trirace", "--trace", path}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  int ops = 0, gated = 0, marks = 0;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e.value("cat", "") == "op") {
      ++ops;
      EXPECT_TRUE(e["args"].contains("func"));
      EXPECT_TRUE(e["args"].contains("bytes"));
      if (e["args"].contains("release")) ++gated;
    }
    if (e.value("cat", "") == "iteration") ++marks;
  }
  EXPECT_GT(ops, 0);
  EXPECT_GT(gated, 0);  // the DENSE chunks' gates, with why they opened
  EXPECT_GT(marks, 0);
  fs::remove_all(dir);
}

TEST(TriraceSimCliTest, APercentRTraceIsAFilePerRankAsTheShimWritesThem) {
  // What bench/e2e/release_reasons.py reads: traces/<preset>/<mode>/trace.<rank>.json
  // with each gated op's class and release.
  const fs::path dir = testing_support::MakeTempDir("trirace-sim-traces-");
  auto r = RunProcess(Sim({"--cluster", "testbed", "--preset", "tiny", "--hosts", "2", "--ranks-per-host", "2",
                           "--modes", "gate", "--trace", (dir / "trace.%r.json").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 4; ++rank) {
    std::ifstream in(dir / ("trace." + std::to_string(rank) + ".json"));
    ASSERT_TRUE(in.good()) << rank;
    const nlohmann::json j = nlohmann::json::parse(in);
    int dense_gated = 0;
    for (const nlohmann::json& e : j["traceEvents"]) {
      EXPECT_EQ(e.value("pid", rank), rank);
      if (e.value("cat", "") == "op" && e["args"].value("class", "") == "DENSE" && e["args"].contains("release")) {
        ++dense_gated;
      }
    }
    EXPECT_GT(dense_gated, 0) << rank;
  }
  fs::remove_all(dir);
}

TEST(TriraceSimCliTest, ItsOwnTracesReplayByDependenciesAndGiveTheRunBack) {
  // Once "traceEvents[3] (Send): no peer"; then a replay 15% short of the
  // run, its gaps turned into compute on one stream.
  const fs::path dir = testing_support::MakeTempDir("trirace-sim-round-trip-");
  auto run = RunProcess(Sim({"--cluster", "testbed", "--preset", "contention", "--modes", "off", "--json", "--trace",
                             (dir / "trace.%r.json").string()}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto replay = RunProcess(Sim({"--cluster", "testbed", "--replay", dir.string(), "--modes", "off", "--json"}));
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_THAT(replay.err, HasSubstr("replay by dependencies"));
  EXPECT_THAT(replay.err, HasSubstr("0 stream gaps unexplained"));
  const double ran = nlohmann::json::parse(run.out)["modes"]["off"]["iteration_ms"].get<double>();
  const double replayed = nlohmann::json::parse(replay.out)["modes"]["off"]["iteration_ms"].get<double>();
  EXPECT_NEAR(replayed, ran, 0.01 * ran) << "the testbed's compute calibration is not applied to measured compute";
  fs::remove_all(dir);
}

TEST(TriraceAdviseCliTest, FromOneRunsTracesItDecidesAndSaysCannotTellWhereTheReplayMisses) {
  const fs::path dir = testing_support::MakeTempDir("trirace-advise-");
  auto run = RunProcess(Sim({"--cluster", "testbed", "--preset", "contention", "--modes", "off", "--trace",
                             (dir / "trace.%r.json").string()}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto advise = RunProcess({TRIRACE_EXE, "advise", dir.string(), "--cluster", "testbed", "--json"});
  ASSERT_EQ(advise.exit_code, 0) << advise.err;
  const nlohmann::json j = nlohmann::json::parse(advise.out);
  EXPECT_EQ(j["verdict"], "turn on");
  EXPECT_EQ(j["recommended"], "trirace");
  EXPECT_TRUE(j["reproduced"].get<bool>());
  EXPECT_NEAR(j["replayed_off_ms"].get<double>(), j["measured_ms"].get<double>(), 0.01 * j["measured_ms"].get<double>());
  EXPECT_EQ(j["what_ifs"].size(), 4u);
  EXPECT_GT(j["modes"]["trirace"]["speedup"].get<double>(), 1.02);

  auto text = RunProcess({TRIRACE_EXE, "advise", dir.string(), "--cluster", "testbed"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("decision: turn it on: trirace"));
  EXPECT_THAT(text.out, HasSubstr("exposed communication"));

  auto wrong = RunProcess({TRIRACE_EXE, "advise", dir.string(), "--cluster", "testbed", "--gbps", "3", "--json"});
  ASSERT_EQ(wrong.exit_code, 0) << wrong.err;
  const nlohmann::json jw = nlohmann::json::parse(wrong.out);
  EXPECT_EQ(jw["verdict"], "cannot tell");
  EXPECT_FALSE(jw.contains("modes")) << "no speed-up where the replay does not reproduce the run";
  fs::remove_all(dir);
}

TEST(TriraceAdviseCliTest, BadInputIsAUsageErrorNamingWhatWasWrong) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"advise", "/nonexistent-trace-dir", "--cluster", "testbed"}, "trirace advise: /nonexistent-trace-dir: not a folder"},
      {{"advise", "/tmp", "--cluster", "testbed", "--qos", "some"}, "--qos 'some': expected none, host or fabric"},
      {{"advise", "/tmp", "--cluster", "testbed", "--gbps", "-1"}, "--gbps -1: expected a rate > 0"},
      {{"advise", "/tmp"}, "--cluster is required"},
  };
  for (const auto& [args, expected] : cases) {
    std::vector<std::string> argv = {TRIRACE_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunProcess(argv);
    EXPECT_EQ(r.exit_code, 2) << expected;
    EXPECT_THAT(r.err, HasSubstr(expected));
  }
}

struct BadInput {
  std::vector<std::string> args;
  std::string says;
};

class TriraceSimBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(TriraceSimBadInputTest, IsAUsageErrorNamingTheFlag) {
  auto r = RunProcess(Sim(GetParam().args));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr(GetParam().says));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TriraceSimBadInputTest,
    ::testing::Values(
        BadInput{{"--cluster", "nope", "--collective", "allreduce", "--bytes", "8"}, "--cluster 'nope': expected one of"},
        BadInput{{"--cluster", "dgx-h100", "--model", "gpt-9", "--pp", "4", "--dp", "8"}, "--model 'gpt-9'"},
        BadInput{{"--cluster", "dgx-h100", "--hosts", "4", "--model", "gpt-1.3b", "--pp", "2", "--dp", "8"},
                 "= 16 GPUs, but cluster dgx-h100 has 32"},
        BadInput{{"--cluster", "testbed", "--preset", "nope"}, "rails-split, rails-shared"},
        BadInput{{"--cluster", "testbed", "--gbps", "1e308", "--preset", "contention"},
                 "expected a rate > 0 and at most 100000 Gbit/s"},
        BadInput{{"--cluster", "testbed", "--preset", "contention", "--microbatches", "-3"},
                 "--microbatches goes with --model; --preset does not read it"},
        BadInput{{"--cluster", "testbed", "--preset", "contention", "--bytes", "8"}, "--bytes goes with --collective"},
        BadInput{{"--cluster", "dgx-h100", "--hosts", "100000", "--model", "gpt-1.3b", "--pp", "8", "--dp", "100000"},
                 "--hosts 100000: expected a count >= 1 and at most 16384"},
        BadInput{{"--cluster", "dgx-h100", "--model", "gpt-1.3b", "--pp", "8", "--dp", "100000"},
                 "the workload has 800000 ranks; the simulator takes at most 16384"},
        BadInput{{"--cluster", "dgx-h100", "--hosts", "8", "--model", "bert-large", "--pp", "32", "--dp", "2"},
                 "more than the 24 layers"},
        BadInput{{"--cluster", "dgx-h100", "--model", "gpt-1.3b", "--pp", "4", "--dp", "8", "--schedule", "zigzag"},
                 "--schedule 'zigzag'"},
        BadInput{{"--cluster", "testbed", "--preset", "nope"}, "--preset 'nope'"},
        BadInput{{"--cluster", "testbed", "--preset", "contention", "--modes", "off,fast"}, "'fast' is not a mode"},
        BadInput{{"--cluster", "testbed", "--collective", "gather", "--bytes", "8"}, "--collective 'gather'"},
        BadInput{{"--cluster", "testbed"}, "give exactly one workload"},
        BadInput{{"--cluster", "testbed", "--hosts", "0", "--preset", "contention"}, "--hosts 0: expected a count >= 1"},
        BadInput{{"--cluster", "testbed", "--hosts", "3", "--preset", "contention"}, "runs 8 ranks but cluster"},
        BadInput{{"--cluster", "testbed", "--gbps", "-1", "--preset", "contention"}, "--gbps -1"},
        BadInput{{"--cluster", "testbed", "--qos", "strict", "--preset", "contention"},
                 "--qos 'strict': expected none, host or fabric"},
        BadInput{{"--cluster", "testbed", "--replay", "/nonexistent-trace-dir"}, "--replay /nonexistent-trace-dir"},
        BadInput{{"--cluster", "testbed", "--collective", "allreduce", "--bytes", "8", "--modes", "off,wire"},
                 "--collective runs one mode"},
        BadInput{{"--cluster", "testbed", "--collective", "allreduce", "--bytes", "8", "--ranks", "0"},
                 "--ranks 0: expected 2 or more"},
        BadInput{{"--cluster", "testbed", "--preset", "contention", "--latency-us", "-5"}, "--latency-us -5"},
        BadInput{{"--cluster", "testbed", "--preset", "contention", "--trace", "/tmp/x.json", "--trace-mode", "fast"},
                 "--trace-mode 'fast': expected one of off, fifo"},
        BadInput{{"--cluster", "dgx-h100", "--model", "gpt-1.3b", "--pp", "4", "--dp", "8", "--warmup", "-1"},
                 "--warmup -1: expected 0 to --iterations - 1"}));

TEST(TriraceSimCliTest, ASpecFileThatDoesNotParseIsNamedWithItsLine) {
  const fs::path dir = testing_support::MakeTempDir("trirace-sim-spec-");
  const std::string path = (dir / "bad.json").string();
  std::ofstream(path) << "{\"hosts\": [\n {\"key\": \"a\",\n  \"nics\": [{\"name\": \"x\" \"gbps\": 1}]}\n]}\n";
  auto r = RunProcess(Sim({"--cluster", path, "--collective", "allreduce", "--bytes", "8"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(path));
  EXPECT_THAT(r.err, HasSubstr("line 3"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trirace
