#include "common/status.h"

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace {
namespace {

using ::testing::HasSubstr;

TEST(StatusTest, SystemErrorNamesTheOperationAndErrno) {
  absl::Status s = SystemError("connect 127.0.0.1:9", ECONNREFUSED);
  EXPECT_THAT(std::string(s.message()), HasSubstr("connect 127.0.0.1:9"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("Connection refused"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("errno 111"));
}

absl::Status FailsAtSecond(int* reached) {
  TRIRACE_RETURN_IF_ERROR(absl::OkStatus());
  *reached = 1;
  TRIRACE_RETURN_IF_ERROR(absl::InternalError("second"));
  *reached = 2;
  return absl::OkStatus();
}

TEST(StatusTest, ReturnIfErrorStopsAtTheFirstFailure) {
  int reached = 0;
  absl::Status s = FailsAtSecond(&reached);
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(s.message(), "second");
}

}  // namespace
}  // namespace trirace
