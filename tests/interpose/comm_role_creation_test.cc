// Comms created under a declared role (trirace_set_new_comm_role) with
// libtrirace.so preloaded over the stand-in NCCL, which records the
// trafficClass of each config it receives (comm_traffic_class.h).
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace trirace::interpose {
namespace {

using ::testing::HasSubstr;

// The probe creates comms under declared roles over the stand-in, which
// records the trafficClass of each config it receives.
class CommRoleAtCreationTest : public ::testing::Test {
 protected:
  testing_support::ProcessResult Run(std::vector<std::pair<std::string, std::string>> env) {
    env.emplace_back("LD_PRELOAD", SHIM_PATH);
    env.emplace_back("TRIRACE_DEBUG", "INFO");
    return testing_support::RunProcess({NCCL_PROBE, "roles", STANDIN_PATH}, env,
                                       {"TRIRACE_TRACE", "TRIRACE_NCCL_LIBRARY", "TRIRACE_DEBUG_FILE"}, 60000);
  }
};

TEST_F(CommRoleAtCreationTest, ScheduleModeSetsTheClassOfEachRolesComms) {
  testing_support::ProcessResult r = Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_COMM_TRAFFIC_CLASS", "auto"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A plain InitRank with a role becomes InitRankConfig with the class.
  EXPECT_THAT(r.out, HasSubstr("roles init-pipeline rc=0 InitRank=0 InitRankConfig=1 tc=184"));
  EXPECT_THAT(r.out, HasSubstr("roles set rc=0 previous=0"));
  EXPECT_THAT(r.out, HasSubstr("roles config-data-parallel rc=0 InitRank=0 InitRankConfig=2 tc=32"));
  EXPECT_THAT(r.out, HasSubstr("roles config-own-class rc=0 InitRank=0 InitRankConfig=3 tc=7"));
  EXPECT_THAT(r.out, HasSubstr("config after: trafficClass=undef"));  // the caller's struct untouched
  EXPECT_THAT(r.out, HasSubstr("roles split-expert rc=0 InitRank=0 InitRankConfig=3 tc=0"));
  EXPECT_THAT(r.out, HasSubstr("roles split-no-config rc=0 InitRank=0 InitRankConfig=3 tc=-2"));
  EXPECT_THAT(r.out, HasSubstr("roles bad rc=2"));
  EXPECT_THAT(r.out, HasSubstr("roles init-no-role rc=0 InitRank=1 InitRankConfig=3"));
  EXPECT_THAT(r.err, HasSubstr("from CommInitRank; role pipeline, trafficClass 184"));
  EXPECT_THAT(r.err, HasSubstr("; role expert"));
  EXPECT_THAT(r.err, HasSubstr("role 9 is not a trirace_role_t"));
  // The role stands as annotated in the exit summary.
  EXPECT_THAT(r.err, HasSubstr("role pipeline (annotated)"));
}

TEST_F(CommRoleAtCreationTest, ObserveModeNamesTheRoleButPassesConfigsThrough) {
  testing_support::ProcessResult r = Run({{"TRIRACE_MODE", "observe"}, {"TRIRACE_COMM_TRAFFIC_CLASS", "auto"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("roles init-pipeline rc=0 InitRank=1 InitRankConfig=0"));
  EXPECT_THAT(r.out, HasSubstr("roles config-data-parallel rc=0 InitRank=1 InitRankConfig=1 tc=undef"));
  EXPECT_THAT(r.out, HasSubstr("roles split-expert rc=0 InitRank=1 InitRankConfig=2 tc=undef"));
  EXPECT_THAT(r.err, HasSubstr("role pipeline (annotated)"));
}

TEST_F(CommRoleAtCreationTest, ABadMappingWarnsOnceAndSetsNothing) {
  testing_support::ProcessResult r = Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_COMM_TRAFFIC_CLASS", "fast"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("TRIRACE_COMM_TRAFFIC_CLASS=\"fast\": \"fast\" is not role=class"));
  EXPECT_THAT(r.out, HasSubstr("roles init-pipeline rc=0 InitRank=1 InitRankConfig=0"));
}
// Every NCCL a user has: the stand-in poses as an older, the known, and a
// future release. From 2.19 on, 2.x is scheduled; a minor newer than the
// headers keeps scheduling (one INFO line) but its ncclConfig_t is left as
// the caller made it; older releases and other majors are only observed.
struct NcclRelease {
  const char* code;
  const char* says;  // on stderr (TRIRACE_DEBUG=INFO)
  bool shapes_configs;
};

class NcclReleaseTest : public CommRoleAtCreationTest, public ::testing::WithParamInterface<NcclRelease> {};

TEST_P(NcclReleaseTest, GetsTheModeAndConfigHandlingOfItsVersion) {
  const NcclRelease& v = GetParam();
  testing_support::ProcessResult r = Run(
      {{"TRIRACE_MODE", "schedule"}, {"TRIRACE_COMM_TRAFFIC_CLASS", "auto"}, {"STANDIN_NCCL_VERSION", v.code}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(v.says));
  if (v.shapes_configs) {
    EXPECT_THAT(r.out, HasSubstr("roles init-pipeline rc=0 InitRank=0 InitRankConfig=1 tc=184"));
    EXPECT_THAT(r.out, HasSubstr("roles config-data-parallel rc=0 InitRank=0 InitRankConfig=2 tc=32"));
  } else {
    EXPECT_THAT(r.out, HasSubstr("roles init-pipeline rc=0 InitRank=1 InitRankConfig=0"));
    EXPECT_THAT(r.out, HasSubstr("roles config-data-parallel rc=0 InitRank=1 InitRankConfig=1 tc=undef"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Releases, NcclReleaseTest,
    ::testing::Values(NcclRelease{"21800", "is older than 2.19.0, the oldest this shim schedules: observe only", false},
                      NcclRelease{"21900", "real NCCL 2.19.0", true},
                      NcclRelease{"22809", "real NCCL 2.28.9", true},
                      NcclRelease{"23100", "is newer than the 2.28 headers this shim was built with: it schedules",
                                  false},
                      NcclRelease{"30000", "is not a 2.x release, which this shim was built for: observe only",
                                  false}));

}  // namespace
}  // namespace trirace::interpose
