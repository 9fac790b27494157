// ncclConfig_t.trafficClass per comm role (interpose/comm/comm_traffic_class.h):
// the mapping's parser and the config the shim builds. What a real creation
// call receives: comm_role_creation_test.cc.
#include "interpose/comm/comm_traffic_class.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

using ::testing::HasSubstr;

TEST(RoleTrafficClassesTest, EmptyMeansNoClassForAnyRole) {
  absl::StatusOr<RoleTrafficClasses> c = ParseRoleTrafficClasses("");
  ASSERT_TRUE(c.ok());
  for (int tc : *c) EXPECT_EQ(tc, kNoTrafficClass);
}

TEST(RoleTrafficClassesTest, AutoUsesThePluginsMarks) {
  absl::StatusOr<RoleTrafficClasses> c = ParseRoleTrafficClasses(" auto ");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[TRIRACE_ROLE_PIPELINE], 184);
  EXPECT_EQ((*c)[TRIRACE_ROLE_TENSOR], 184);
  EXPECT_EQ((*c)[TRIRACE_ROLE_EXPERT], 0);
  EXPECT_EQ((*c)[TRIRACE_ROLE_DATA_PARALLEL], 32);
  EXPECT_EQ((*c)[TRIRACE_ROLE_UNKNOWN], kNoTrafficClass);
}

TEST(RoleTrafficClassesTest, ExplicitListsTakeEitherSpellingOfDataParallel) {
  absl::StatusOr<RoleTrafficClasses> c = ParseRoleTrafficClasses("pipeline=5, data_parallel=1,expert = 0");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)[TRIRACE_ROLE_PIPELINE], 5);
  EXPECT_EQ((*c)[TRIRACE_ROLE_DATA_PARALLEL], 1);
  EXPECT_EQ((*c)[TRIRACE_ROLE_EXPERT], 0);
  EXPECT_EQ((*c)[TRIRACE_ROLE_TENSOR], kNoTrafficClass);
  EXPECT_EQ((*ParseRoleTrafficClasses("data-parallel=2"))[TRIRACE_ROLE_DATA_PARALLEL], 2);
}

TEST(RoleTrafficClassesTest, BadItemsAreNamedWithWhatIsAccepted) {
  for (const char* bad : {"pipeline", "pipeline=256", "pipeline=-1", "ring=3", "unknown=1", "pipeline=x"}) {
    absl::StatusOr<RoleTrafficClasses> c = ParseRoleTrafficClasses(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(std::string("\"") + bad + "\" is not role=class"));
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("classes 0..255"));
  }
}

class ConfigWithRoleTrafficClassTest : public ::testing::Test {
 protected:
  RoleTrafficClasses classes_ = *ParseRoleTrafficClasses("auto");
  ncclConfig_t storage_{};
  int tc_ = 0;
};

TEST_F(ConfigWithRoleTrafficClassTest, ACallerConfigIsCopiedNeverWritten) {
  ncclConfig_t caller = NCCL_CONFIG_INITIALIZER;
  caller.blocking = 0;
  const ncclConfig_t* got = ConfigWithRoleTrafficClass(&caller, TRIRACE_ROLE_PIPELINE, classes_, &storage_, &tc_);
  ASSERT_EQ(got, &storage_);
  EXPECT_EQ(got->trafficClass, 184);
  EXPECT_EQ(got->blocking, 0);
  EXPECT_EQ(tc_, 184);
  EXPECT_EQ(caller.trafficClass, NCCL_CONFIG_UNDEF_INT);
}

TEST_F(ConfigWithRoleTrafficClassTest, NullMeansNcclDefaultsPlusTheClass) {
  const ncclConfig_t* got = ConfigWithRoleTrafficClass(nullptr, TRIRACE_ROLE_DATA_PARALLEL, classes_, &storage_, &tc_);
  ASSERT_EQ(got, &storage_);
  EXPECT_EQ(got->magic, 0xcafebeefu);
  EXPECT_EQ(got->trafficClass, 32);
  EXPECT_EQ(got->blocking, NCCL_CONFIG_UNDEF_INT);
}

TEST_F(ConfigWithRoleTrafficClassTest, TheCallersClassWinsAndUnknownRolesAreLeftAlone) {
  ncclConfig_t caller = NCCL_CONFIG_INITIALIZER;
  caller.trafficClass = 7;
  EXPECT_EQ(ConfigWithRoleTrafficClass(&caller, TRIRACE_ROLE_PIPELINE, classes_, &storage_, &tc_), &caller);
  EXPECT_EQ(tc_, kNoTrafficClass);
  EXPECT_EQ(ConfigWithRoleTrafficClass(nullptr, TRIRACE_ROLE_UNKNOWN, classes_, &storage_, &tc_), nullptr);
  EXPECT_EQ(ConfigWithRoleTrafficClass(nullptr, 9, classes_, &storage_, &tc_), nullptr);
  RoleTrafficClasses none = *ParseRoleTrafficClasses("");
  EXPECT_EQ(ConfigWithRoleTrafficClass(nullptr, TRIRACE_ROLE_PIPELINE, none, &storage_, &tc_), nullptr);
}

TEST_F(ConfigWithRoleTrafficClassTest, AStructThatIsNotAConfigGoesToNcclAsItIs) {
  ncclConfig_t garbage = NCCL_CONFIG_INITIALIZER;
  garbage.magic = 0x12345678;
  EXPECT_EQ(ConfigWithRoleTrafficClass(&garbage, TRIRACE_ROLE_PIPELINE, classes_, &storage_, &tc_), &garbage);
  EXPECT_EQ(tc_, kNoTrafficClass);
}

}  // namespace
}  // namespace trirace::interpose
