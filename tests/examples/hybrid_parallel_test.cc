// examples/hybrid_parallel end to end: 4 and 8 processes on hostccl over
// loopback through the TriRace TCP net plugin, both schedules, with and
// without the embedding (SPARSE) stage. Every run must finish (launch.sh
// and the example's own watchdog kill a hung job) and end with the checksum
// that reference.cc computes without any communication, so runs of one
// model in different schedules and rank orders agree byte for byte.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reference.h"
#include "support/subprocess.h"

namespace hybrid {
namespace {

using ::testing::HasSubstr;
using testing_support::ProcessResult;
using testing_support::RunProcess;

struct Job {
  ProcessResult process;
  std::string checksum;  // from the RESULT line; empty if none
  std::string result;    // the RESULT line
};

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// One occupancy segment per process of this test (ctest may run suites
// side by side), removed when the test binary exits.
const std::string& JobId() {
  static const std::string* id = [] {
    auto* s = new std::string("hybrid-test-" + std::to_string(getpid()));
    std::atexit([] {
      const std::string shm = "/dev/shm/trirace-" + std::to_string(getuid()) + "-" + JobId();
      std::remove(shm.c_str());
    });
    return s;
  }();
  return *id;
}

std::vector<std::pair<std::string, std::string>> JobEnv() {
  return {{"TRIRACE_NET_IFNAME", "lo"}, {"NCCL_NET_PLUGIN", NET_PLUGIN}, {"TRIRACE_JOB_ID", JobId()}};
}

Job Launch(int nranks, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {LAUNCH_SH, "-n", std::to_string(nranks), "--timeout", "90", "--",
                                   HYBRID_BIN, "--timeout", "80"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  Job job;
  job.process = RunProcess(argv, JobEnv(), {"RANK", "WORLD_SIZE", "RENDEZVOUS_FILE"}, 100000);
  std::smatch m;
  static const std::regex kResult("RESULT \\{.*\"checksum\":\"([0-9a-f]{16})\".*\\}");
  if (std::regex_search(job.process.out, m, kResult)) {
    job.result = m[0];
    job.checksum = m[1];
  }
  return job;
}

std::string Expected(const std::vector<std::string>& flags) {
  Config c;
  std::string error;
  EXPECT_TRUE(ParseArgs(flags, &c, &error)) << error;
  return Hex(ComputeExpected(c).checksum);
}

struct Model {
  const char* name;
  int nranks;
  std::vector<std::string> flags;
};

void PrintTo(const Model& m, std::ostream* os) { *os << m.name; }

class HybridRun : public ::testing::TestWithParam<Model> {};

// One model, run in both schedules and both rank orders.
TEST_P(HybridRun, EverySchedulePrintsTheReferenceChecksum) {
  const Model& model = GetParam();
  const std::string expected = Expected(model.flags);
  const std::vector<std::vector<std::string>> variants = {
      {"--schedule", "1f1b", "--order", "dp-inner"},
      {"--schedule", "2bw", "--order", "pp-inner"},
  };
  std::vector<std::string> seen;
  for (const auto& variant : variants) {
    std::vector<std::string> flags = model.flags;
    flags.insert(flags.end(), variant.begin(), variant.end());
    Job job = Launch(model.nranks, flags);
    const std::string what = std::string(model.name) + " " + variant[1];
    ASSERT_FALSE(job.process.timed_out) << what;
    ASSERT_EQ(job.process.exit_code, 0) << what << "\n" << job.process.err;
    ASSERT_FALSE(job.checksum.empty()) << what << ": no RESULT line in\n" << job.process.out;
    EXPECT_EQ(job.checksum, expected) << what;
    EXPECT_THAT(job.result, HasSubstr("\"ranks\":" + std::to_string(model.nranks)));
    EXPECT_THAT(job.result, HasSubstr("\"median_ms\":"));
    seen.push_back(job.checksum);
  }
  EXPECT_EQ(seen[0], seen[1]);
}

INSTANTIATE_TEST_SUITE_P(
    Loopback, HybridRun,
    ::testing::Values(
        Model{"pp2_dp2", 4, {"--preset", "tiny", "--stages", "2", "--replicas", "2"}},
        Model{"emb_pp1_dp2", 4, {"--preset", "tiny", "--embedding", "--stages", "1", "--replicas", "2"}},
        Model{"pp4_dp2", 8, {"--preset", "tiny", "--stages", "4", "--replicas", "2"}},
        Model{"emb_pp3_dp2", 8, {"--preset", "tiny", "--embedding", "--stages", "3", "--replicas", "2"}},
        Model{"emb_pp1_dp4", 8, {"--preset", "tiny", "--embedding", "--stages", "1", "--replicas", "4"}}),
    [](const ::testing::TestParamInfo<Model>& info) { return std::string(info.param.name); });

TEST(HybridProcess, AgainstTheRealNcclItExplainsWhatIsMissing) {
  if (std::string(REAL_NCCL_DIR).empty()) GTEST_SKIP() << "no real libnccl.so.2 found at configure time";
  ProcessResult r = RunProcess({HYBRID_BIN, "--preset", "tiny", "--rank", "0", "--nranks", "4",
                                "--uid-file", "/nonexistent/id"},
                               {{"LD_LIBRARY_PATH", REAL_NCCL_DIR}}, {}, 30000);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no host-stream API"));
  EXPECT_THAT(r.err, HasSubstr("hostcclStreamCreate"));
}

TEST(HybridProcess, AHungJobEndsByTheWatchdog) {
  // Rank 0 alone in a 4-rank job waits forever for the others.
  const std::string dir = testing_support::MakeTempDir("hybrid-watchdog");
  auto env = JobEnv();
  ProcessResult r = RunProcess({HYBRID_BIN, "--preset", "tiny", "--rank", "0", "--nranks", "4",
                                "--uid-file", dir + "/id", "--timeout", "2"},
                               env, {}, 60000);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_THAT(r.err, HasSubstr("still running after --timeout 2 s"));
}

TEST(HybridProcess, RankZeroRefusesAStaleIdFile) {
  const std::string dir = testing_support::MakeTempDir("hybrid-stale");
  const std::string id = dir + "/id";
  { std::FILE* f = std::fopen(id.c_str(), "w"); ASSERT_NE(f, nullptr); std::fclose(f); }
  ProcessResult r = RunProcess({HYBRID_BIN, "--preset", "tiny", "--rank", "0", "--nranks", "4",
                                "--uid-file", id},
                               JobEnv(), {}, 30000);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("already exists: give each run a fresh path"));
}

TEST(HybridProcess, BadFlagsExitWithUsageCode) {
  ProcessResult r = RunProcess({HYBRID_BIN, "--schedule", "gpipe"}, {}, {}, 30000);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--schedule 'gpipe': expected 1f1b or 2bw"));
  r = RunProcess({HYBRID_BIN, "--preset", "tiny", "--rank", "0", "--nranks", "3", "--uid-file", "/x"},
                 {}, {}, 30000);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("= 4 ranks"));
}

TEST(HybridProcess, HelpListsTheFlags) {
  ProcessResult r = RunProcess({HYBRID_BIN, "--help"}, {}, {}, 30000);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--preset NAME"));
  EXPECT_THAT(r.out, HasSubstr("--micro-batches M=4"));
}

TEST(HybridLauncher, KillsEveryRankWhenOneFails) {
  ProcessResult r = RunProcess({LAUNCH_SH, "-n", "3", "--timeout", "60", "--", "sh", "-c",
                                "if [ \"$RANK\" = 2 ]; then echo broken >&2; exit 7; fi; exec sleep 50"},
                               {}, {}, 30000);
  EXPECT_FALSE(r.timed_out) << "launch.sh waited for the sleeping ranks";
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("rank 2 exited with 7"));
  EXPECT_THAT(r.err, HasSubstr("broken"));
}

TEST(HybridLauncher, TimeoutKillsEveryRank) {
  ProcessResult r = RunProcess({LAUNCH_SH, "-n", "2", "--timeout", "1", "--", "sleep", "50"}, {}, {}, 30000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
}

TEST(HybridExample, ReferenceFlagPrintsTheExpectedChecksum) {
  ProcessResult r = RunProcess({HYBRID_BIN, "--preset", "tiny", "--reference"}, {}, {}, 30000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"checksum\":\"" + Expected({"--preset", "tiny"}) + "\""));
}

}  // namespace
}  // namespace hybrid
