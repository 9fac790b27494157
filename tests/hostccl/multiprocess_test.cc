// Multi-process tests: ranks are processes (hostccl_test_rank), bytes cross
// the real TCP net plugin on loopback.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::ProcessResult;
using testing_support::RunProcess;

ProcessResult Launch(std::vector<std::string> args,
                     std::vector<std::pair<std::string, std::string>> env = {}) {
  args.insert(args.begin(), {HOSTCCL_TEST_RANK, "launch"});
  // Hold the default plugin lookup (next to libnccl.so.2) to the one built here.
  return RunProcess(args, env, {"NCCL_NET_PLUGIN"}, 200000);
}

void ExpectPassed(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(r.timed_out);
  EXPECT_THAT(r.out, HasSubstr("PASSED"));
  EXPECT_THAT(r.out, Not(HasSubstr("FAIL")));
}

class HostcclSweep : public ::testing::TestWithParam<int> {};

TEST_P(HostcclSweep, EveryCollectiveTypeOpCountAndPlacement) {
  ProcessResult r = Launch({std::to_string(GetParam()), "sweep"});
  ExpectPassed(r);
  EXPECT_THAT(r.out, HasSubstr(" 0 failed"));
}

INSTANTIATE_TEST_SUITE_P(Ranks, HostcclSweep, ::testing::Values(2, 3, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "ranks"; });

TEST(HostcclMultiProcess, Groups) { ExpectPassed(Launch({"4", "groups"})); }

TEST(HostcclMultiProcess, SplitByColorAndKey) { ExpectPassed(Launch({"5", "split"})); }

TEST(HostcclMultiProcess, NonblockingInitAndFinalize) { ExpectPassed(Launch({"3", "nonblocking"})); }

// Ranks of one host share memory by default; TRIRACE_HOSTCCL_SHM=0 puts every
// byte on the net plugin. Both paths must detect a killed rank.
class HostcclKilledRank : public ::testing::TestWithParam<bool> {};

TEST_P(HostcclKilledRank, GivesRemoteErrorOnSurvivors) {
  const bool shm = GetParam();
  ProcessResult r = Launch({"3", "kill", "--victim", "2"}, {{"TRIRACE_NET_TIMEOUT_MS", "3000"},
                                                              {"TRIRACE_HOSTCCL_SHM", shm ? "1" : "0"}});
  ExpectPassed(r);
  EXPECT_THAT(r.out, HasSubstr("peer death detected"));
  if (shm) {
    EXPECT_THAT(r.out, HasSubstr("shared-memory"));  // the survivors' last errors name the path
  }
}

INSTANTIATE_TEST_SUITE_P(Path, HostcclKilledRank, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "shm" : "net"; });

TEST(HostcclMultiProcess, RanksOfOneHostShareMemory) {
  ProcessResult r = Launch({"3", "groups"}, {{"TRIRACE_DEBUG", "INFO"}});
  ExpectPassed(r);
  EXPECT_THAT(r.err, HasSubstr("rank 0: shared memory to 2 same-host peers"));
}

TEST(HostcclMultiProcess, SweepOverTheNetPluginAlone) {
  ProcessResult r = Launch({"3", "sweep"}, {{"TRIRACE_HOSTCCL_SHM", "0"}, {"TRIRACE_DEBUG", "INFO"}});
  ExpectPassed(r);
  EXPECT_THAT(r.out, HasSubstr(" 0 failed"));
  EXPECT_THAT(r.err, Not(HasSubstr("shared memory to")));
}

TEST(HostcclMultiProcess, RanksThatDisagreeOnReceiverReadyRunEagerly) {
  // Rank 1 has TRIRACE_HOSTCCL_RECEIVER_READY=0: a handshake that only some
  // ranks do would hang; the communicators run eagerly and rank 0 says so.
  ProcessResult r = Launch({"3", "sweep"}, {{"TRIRACE_HOSTCCL_SHM", "0"}, {"HOSTCCL_TEST_EAGER_RANK", "1"}});
  ExpectPassed(r);
  EXPECT_THAT(r.out, HasSubstr(" 0 failed"));
  EXPECT_THAT(r.err, HasSubstr("TRIRACE_HOSTCCL_RECEIVER_READY is on at 2 of 3 ranks"));
}

TEST(HostcclMultiProcess, MissingRankTimesOutWithClearError) {
  ProcessResult r = Launch({"3", "missing_rank", "--start", "2"},
                           {{"TRIRACE_HOSTCCL_BOOTSTRAP_TIMEOUT_MS", "1500"}});
  ExpectPassed(r);
  EXPECT_THAT(r.out, HasSubstr("missing ranks: 2"));
}

// The net plugin lookup (NCCL's rules), seen through a plain NCCL program.
ProcessResult DropIn(const std::string& plugin) {
  std::vector<std::pair<std::string, std::string>> env = {{"LD_LIBRARY_PATH", HOSTCCL_LIB_DIR}};
  std::vector<std::string> unset;
  if (plugin.empty()) unset.push_back("NCCL_NET_PLUGIN");
  else env.emplace_back("NCCL_NET_PLUGIN", plugin);
  return RunProcess({HOSTCCL_DROPIN}, env, unset, 60000);
}

TEST(HostcclNetPluginLookup, DefaultIsTheTcpPluginNextToTheLibrary) {
  ProcessResult r = DropIn("");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("drop-in AllReduce correct"));
}

TEST(HostcclNetPluginLookup, AbsolutePathAndNameListWork) {
  ProcessResult path = DropIn(std::string("missing-one,") + HOSTCCL_NET_PLUGIN_PATH);
  EXPECT_EQ(path.exit_code, 0) << path.err;
}

TEST(HostcclNetPluginLookup, NoneAndUnknownNamesFailClearly) {
  ProcessResult none = DropIn("none");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_THAT(none.err, HasSubstr("NCCL_NET_PLUGIN=none"));
  ProcessResult unknown = DropIn("nosuchplugin");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("libnccl-net-nosuchplugin.so"));
}

}  // namespace
