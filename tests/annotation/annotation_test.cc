#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"
#include "trirace/trirace.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::RunProcess;

TEST(AnnotationApiTest, WithoutAProviderEveryCallIsANoOp) {
  auto r = RunProcess({ANNOTATION_CLIENT}, {}, {"LD_PRELOAD"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("client: version=0 active=0"));
  EXPECT_THAT(r.out, HasSubstr("client: dense_ahead=0"));
  EXPECT_THAT(r.out, HasSubstr("client: push=1"));  // TRIRACE_NOT_LOADED
  EXPECT_THAT(r.out, HasSubstr("client: pop=1"));
  EXPECT_THAT(r.out, HasSubstr("client: role=1"));
  EXPECT_THAT(r.out, HasSubstr("client: new_comm_role=1"));
  EXPECT_THAT(r.out, Not(HasSubstr("provider:")));
}

TEST(AnnotationApiTest, WithAProviderPreloadedItSeesTheTagsPushed) {
  auto r = RunProcess({ANNOTATION_CLIENT}, {{"LD_PRELOAD", FAKE_PROVIDER}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("client: version=1"));
  EXPECT_THAT(r.out, HasSubstr("provider: iteration begin 7"));
  EXPECT_THAT(r.out, HasSubstr("provider: push layer=3 stage=1 mb=-1 phase=1 iter=7 class=3 prio=-1 depth=1"));
  EXPECT_THAT(r.out, HasSubstr("provider: push layer=-1 stage=-1 mb=2 phase=-1 iter=-1 class=-1 prio=5 depth=2"));
  EXPECT_THAT(r.out, HasSubstr("provider: role comm=0x1234 role=2"));
  // The provider's table is too short for set_new_comm_role and
  // dense_ahead: not loaded, no call.
  EXPECT_THAT(r.out, HasSubstr("client: new_comm_role=1"));
  EXPECT_THAT(r.out, HasSubstr("client: dense_ahead=0"));
  EXPECT_THAT(r.out, HasSubstr("provider: pop depth=0"));
  // The third pop is unbalanced: reported, not fatal.
  EXPECT_THAT(r.out, HasSubstr("provider: unbalanced pop\nclient: pop=3"));
  EXPECT_THAT(r.out, HasSubstr("provider: iteration end 7"));
}

TEST(AnnotationApiTest, CxxScopeHelpersCompileAndAreNoOpsWithoutAProvider) {
  // This test binary has no provider loaded.
  ASSERT_EQ(trirace_api(), nullptr);
  {
    trirace::TagScope scope(trirace::Tag().Layer(1).Phase(TRIRACE_PHASE_FORWARD).Class(TRIRACE_CLASS_P2P));
    EXPECT_EQ(trirace_pop_tag(), TRIRACE_NOT_LOADED);
  }
  trirace::Tag t;
  t.Stage(2).MicroBatch(3).Iteration(9).Priority(1);
  EXPECT_EQ(t.get().stage, 2);
  EXPECT_EQ(t.get().layer, TRIRACE_UNSET);
  EXPECT_EQ(trirace_scheduler_active(), 0);
}

}  // namespace
