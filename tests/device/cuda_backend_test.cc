// The CUDA backend builds, loads and, without a GPU, says so as a Status.
#include <dlfcn.h>
#include <stdlib.h>

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "interpose/device/device.h"

namespace trirace::device {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CudaBackendTest, ReportsAMissingDriverLibrary) {
  auto dev = OpenCudaDevice("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(dev.status().message()), StartsWith("no CUDA driver: dlopen(/nonexistent/libcuda.so.1) failed"));
}

TEST(CudaBackendTest, ReportsCuInitFailureWithTheDriversText) {
  setenv("FAKE_CUINIT_RESULT", "100", 1);
  auto dev = OpenCudaDevice(TRIRACE_FAKE_CUDA_DRIVER);
  unsetenv("FAKE_CUINIT_RESULT");
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(dev.status().message(),
            "cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected");
}

TEST(CudaBackendTest, ReportsAMissingEntryPointByName) {
  setenv("FAKE_CUINIT_RESULT", "0", 1);
  auto dev = OpenCudaDevice(TRIRACE_FAKE_CUDA_DRIVER);
  unsetenv("FAKE_CUINIT_RESULT");
  ASSERT_FALSE(dev.ok());
  EXPECT_THAT(dev.status().message(), HasSubstr("lacks cuDriverGetVersion"));
}

#ifdef TRIRACE_CUDA_STUB_DRIVER
TEST(CudaBackendTest, TheToolkitsStubDriverFailsCleanly) {
  auto dev = OpenCudaDevice(TRIRACE_CUDA_STUB_DRIVER);
  ASSERT_FALSE(dev.ok());
  EXPECT_THAT(std::string(dev.status().message()), StartsWith("cuInit failed: "));
}
#endif

// On this machine: no GPU -> a clean "no CUDA driver" / cuInit status. On a
// GPU machine the same test exercises the real driver.
TEST(CudaBackendTest, TheSystemDriverLoadsOrSaysWhyNot) {
  auto dev = OpenCudaDevice();
  if (!dev.ok()) {
    EXPECT_EQ(dev.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(dev.status().message()),
                AnyOf(StartsWith("no CUDA driver: "), StartsWith("cuInit failed: ")));
    return;
  }
  EXPECT_EQ((*dev)->name(), "cuda");
  // This thread has no current context (nothing made one), so gates cannot
  // be placed; the backend says so instead of failing inside the driver.
  auto gates = (*dev)->AllocateGates(4);
  ASSERT_FALSE(gates.ok());
  EXPECT_THAT(gates.status().message(), HasSubstr("no current CUDA context"));
}

TEST(SelectDeviceTest, TheRealNcclIsNotHostcclAndFallsBackToCuda) {
  if (std::string(TRIRACE_REAL_NCCL_LIBRARY).empty()) GTEST_SKIP() << "no real libnccl.so.2 found at configure time";
  void* nccl = dlopen(TRIRACE_REAL_NCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (nccl == nullptr) GTEST_SKIP() << "cannot load the real NCCL: " << dlerror();
  EXPECT_FALSE(IsHostccl(nccl));
  auto host = OpenHostDevice(nccl);
  ASSERT_FALSE(host.ok());
  EXPECT_THAT(host.status().message(), HasSubstr("does not export hostcclStreamCreate"));
  auto dev = SelectDevice(nccl);
  if (!dev.ok()) {
    EXPECT_THAT(std::string(dev.status().message()),
                AnyOf(StartsWith("no CUDA driver: "), StartsWith("cuInit failed: ")));
  } else {
    EXPECT_EQ((*dev)->name(), "cuda");
  }
  dlclose(nccl);
}

TEST(SelectDeviceTest, NullHandleIsNotHostccl) {
  EXPECT_FALSE(IsHostccl(nullptr));
  EXPECT_EQ(OpenHostDevice(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trirace::device
