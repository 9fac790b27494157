// libtrirace.so preloaded into multi-process jobs over hostccl (the CPU
// NCCL): a seeded random workload gives byte-identical results and return
// codes with and without the shim, and each rank's trace holds exactly the
// ops it issued, per comm in issue order, with their tags and real
// (stream) completion times.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rank_launcher.h"
#include "trace_file.h"

namespace trirace::interpose::testing {
namespace {

using ::testing::HasSubstr;
using testing_support::MakeTempDir;
using testing_support::ProcessResult;

const std::vector<std::string> kUnset = {"LD_PRELOAD", "TRIRACE_MODE", "TRIRACE_TRACE", "TRIRACE_NCCL_LIBRARY",
                                         "TRIRACE_DEBUG", "TRIRACE_DEBUG_FILE", "NCCL_NET_PLUGIN"};

struct Config {
  uint64_t seed;
  int nranks;
  int ops;
};

class HostcclTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
    dir_ = MakeTempDir("trirace-interpose-hostccl");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::vector<ProcessResult> Run(const Config& c, bool shim) {
    RankJob job;
    job.nranks = c.nranks;
    job.argv = [&](int rank) {
      return RandomRanksArgv(RANDOM_RANKS, HOSTCCL_LIBRARY, rank, c.nranks, c.seed, c.ops);
    };
    if (shim) job.set_env = {{"LD_PRELOAD", SHIM_PATH}, {"TRIRACE_TRACE", dir_ + "/trace.%r.json"}};
    job.unset_env = kUnset;
    job.timeout_ms = 120000;
    return LaunchRanks(job);
  }

  std::string dir_;
};

// "plan <shim index> <op> <funcs...>" lines -> per comm, the funcs in order.
std::map<int, std::vector<std::pair<int, std::string>>> Plan(const std::string& out) {
  std::map<int, std::vector<std::pair<int, std::string>>> plan;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("plan ", 0) != 0) continue;
    std::istringstream f(line.substr(5));
    int comm = 0, op = 0;
    f >> comm >> op;
    for (std::string func; f >> func;) plan[comm].push_back({op, func});
  }
  return plan;
}

TEST_P(HostcclTest, RandomWorkloadIsIdenticalWithAndWithoutTheShimAndFullyTraced) {
  const Config c = GetParam();
  std::vector<ProcessResult> plain = Run(c, /*shim=*/false);
  std::vector<ProcessResult> shim = Run(c, /*shim=*/true);
  for (int r = 0; r < c.nranks; ++r) {
    ASSERT_FALSE(plain[r].timed_out) << "rank " << r << " without the shim timed out: " << plain[r].err;
    ASSERT_FALSE(shim[r].timed_out) << "rank " << r << " with the shim timed out: " << shim[r].err;
    ASSERT_EQ(plain[r].exit_code, 0) << "rank " << r << ": " << plain[r].err;
    ASSERT_EQ(shim[r].exit_code, 0) << "rank " << r << ": " << shim[r].err;
    EXPECT_EQ(WithoutUidLine(plain[r].out), WithoutUidLine(shim[r].out)) << "rank " << r;
    EXPECT_THAT(plain[r].out, HasSubstr("comm 0 op 0"));
    EXPECT_THAT(plain[r].out, ::testing::Not(HasSubstr("sync=1")));
  }
  for (int r = 0; r < c.nranks; ++r) {
    TraceFile t;
    std::string error;
    ASSERT_TRUE(ReadTrace(dir_ + "/trace." + std::to_string(r) + ".json", &t, &error)) << error;
    EXPECT_EQ(CheckPerfettoStructure(t), "");
    EXPECT_EQ(t.other["dropped_events"], "0");
    EXPECT_EQ(t.other["incomplete_events"], "0");
    auto plan = Plan(shim[r].out);
    ASSERT_FALSE(plan.empty());
    size_t total = 0;
    for (const auto& [comm, expected] : plan) {
      std::vector<TraceOp> ops = OpsOfComm(t, comm);
      ASSERT_EQ(ops.size(), expected.size()) << "rank " << r << " comm " << comm;
      total += ops.size();
      uint64_t last_group = 0;
      for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i].seq, i);
        EXPECT_EQ(ops[i].func, expected[i].second) << "rank " << r << " comm " << comm << " op " << i;
        EXPECT_EQ(ops[i].args["tag"]["layer"], expected[i].first);
        EXPECT_EQ(ops[i].result, 0);
        EXPECT_EQ(ops[i].completion, "stream");
        if (ops[i].func == "Send") {
          EXPECT_NE(ops[i].group, 0u);
          EXPECT_GT(ops[i].group, last_group);
          last_group = ops[i].group;
        }
        if (ops[i].func == "Recv") {
          EXPECT_EQ(ops[i].group, last_group);
        }
      }
    }
    EXPECT_EQ(t.ops.size(), total) << "rank " << r << ": ops outside the plan";
    // The parity split (plan comm 2) was annotated as data-parallel.
    if (shim[r].out.find("split 1 color") != std::string::npos) {
      EXPECT_GE(CommIndexNamed(t, "data-parallel (annotated)"), 2);
    }
  }
}

void PrintTo(const Config& c, std::ostream* os) {
  *os << "seed " << c.seed << ", " << c.nranks << " ranks, " << c.ops << " ops per comm";
}

INSTANTIATE_TEST_SUITE_P(Seeds, HostcclTest,
                         ::testing::Values(Config{11, 2, 12}, Config{12, 3, 12}, Config{13, 4, 10},
                                           Config{14, 2, 16}),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return "seed" + std::to_string(info.param.seed) + "_ranks" +
                                  std::to_string(info.param.nranks);
                         });

std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// A child forked by a rank while the shim's engine, watchdog and watcher
// threads run, which ends with exit(): the shim's exit hook must not stop,
// join or drain threads that only the parent has (it used to join the
// engine's thread, which never ends in the child).
TEST(ShimForkTest, AForkedChildExitsAtOnceInScheduleMode) {
  if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
  RankJob job;
  job.nranks = 2;
  job.argv = [](int rank) {
    std::vector<std::string> argv = RandomRanksArgv(RANDOM_RANKS, HOSTCCL_LIBRARY, rank, 2, /*seed=*/5, /*ops=*/6);
    argv.insert(argv.end(), {"--fork-exit", "1"});
    return argv;
  };
  job.set_env = {{"LD_PRELOAD", SHIM_PATH}, {"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "trirace"}};
  job.unset_env = kUnset;
  job.timeout_ms = 120000;
  std::vector<ProcessResult> ranks = LaunchRanks(job);
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(ranks[r].timed_out) << "rank " << r << ": " << ranks[r].err;
    EXPECT_EQ(ranks[r].exit_code, 0) << "rank " << r << ": " << ranks[r].err;
    EXPECT_THAT(ranks[r].out, HasSubstr("fork child exit=0")) << "rank " << r << ": " << ranks[r].err;
  }
}

TEST(AllreduceExampleTest, RunsUnchangedUnderTheShimAndItsTraceLoadsInPerfetto) {
  const std::string example = ALLREDUCE_CHECK;
  if (example.empty()) GTEST_SKIP() << "examples/allreduce_check is not built";
  if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
  const std::string dir = MakeTempDir("trirace-interpose-allreduce");
  const std::string libdir = std::filesystem::path(HOSTCCL_LIBRARY).parent_path().string();
  constexpr int kRanks = 3;
  const std::vector<std::string> argv = {example, "--nranks", std::to_string(kRanks), "--count", "65536"};
  std::vector<std::string> unset = kUnset;
  ProcessResult plain = testing_support::RunProcess(argv, {{"LD_LIBRARY_PATH", libdir}}, unset, 120000);
  unset.erase(std::remove(unset.begin(), unset.end(), "LD_PRELOAD"), unset.end());
  unset.erase(std::remove(unset.begin(), unset.end(), "TRIRACE_TRACE"), unset.end());
  ProcessResult shim = testing_support::RunProcess(
      argv, {{"LD_LIBRARY_PATH", libdir}, {"LD_PRELOAD", SHIM_PATH}, {"TRIRACE_TRACE", dir + "/ar.%p.json"}}, unset,
      120000);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(shim.exit_code, 0) << shim.err;
  EXPECT_EQ(SortedLines(plain.out), SortedLines(shim.out));
  EXPECT_THAT(shim.out, HasSubstr("PASSED"));

  int with_ops = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    TraceFile t;
    std::string error;
    ASSERT_TRUE(ReadTrace(entry.path().string(), &t, &error)) << error;
    EXPECT_EQ(CheckPerfettoStructure(t), "") << entry.path();
    if (t.ops.empty()) continue;  // the launcher process only made the unique id
    ++with_ops;
    ASSERT_EQ(t.ops.size(), 1u);
    EXPECT_EQ(t.ops[0].func, "AllReduce");
    EXPECT_EQ(t.ops[0].args["bytes"], 65536 * 4);
    EXPECT_EQ(t.ops[0].completion, "stream");
    EXPECT_EQ(t.ops[0].comm_index, 1);
    EXPECT_THAT(t.track_names[t.ops[0].tid], HasSubstr("rank "));
  }
  EXPECT_EQ(with_ops, kRanks);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trirace::interpose::testing
