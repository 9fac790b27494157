#include "nccl_adapter/nccl_result.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace trirace {
namespace {

TEST(NcclResultTest, MapsEachCodeFamilyToItsNcclResult) {
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

}  // namespace
}  // namespace trirace
