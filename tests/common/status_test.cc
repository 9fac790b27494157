#include "common/status.h"

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace {
namespace {

using ::testing::HasSubstr;

TEST(StatusTest, MapsEachCodeFamilyToItsNcclResult) {
  EXPECT_EQ(ToNcclResult(absl::OkStatus()), ncclSuccess);
  EXPECT_EQ(ToNcclResult(absl::InvalidArgumentError("x")), ncclInvalidArgument);
  EXPECT_EQ(ToNcclResult(absl::OutOfRangeError("x")), ncclInvalidArgument);
  EXPECT_EQ(ToNcclResult(absl::FailedPreconditionError("x")), ncclInvalidUsage);
  EXPECT_EQ(ToNcclResult(absl::UnimplementedError("x")), ncclInvalidUsage);
  EXPECT_EQ(ToNcclResult(RemoteError("peer closed")), ncclRemoteError);
  EXPECT_EQ(ToNcclResult(absl::DeadlineExceededError("x")), ncclRemoteError);
  EXPECT_EQ(ToNcclResult(absl::AbortedError("x")), ncclRemoteError);
  EXPECT_EQ(ToNcclResult(InternalError("bad state")), ncclInternalError);
  EXPECT_EQ(ToNcclResult(absl::DataLossError("x")), ncclInternalError);
  EXPECT_EQ(ToNcclResult(SystemError("open", ENOENT)), ncclSystemError);
  EXPECT_EQ(ToNcclResult(absl::ResourceExhaustedError("x")), ncclSystemError);
}

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
