// The NCCL API of hostccl within one process: version and error strings,
// argument checking, ranks as threads (ncclCommInitAll, grouped init),
// PreMulSum residence and CommAbort during an operation in flight.
#include <dlfcn.h>

#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <hostccl/stream.h>
#include <nccl.h>

namespace {

using ::testing::HasSubstr;

TEST(HostcclApi, VersionIs22809) {
  int v = 0;
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, 22809);
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
}

TEST(HostcclApi, ErrorStringsMatchTheRealLibrary) {
  void* real = dlopen(HOSTCCL_REAL_NCCL, RTLD_NOW | RTLD_LOCAL);
  if (real == nullptr) GTEST_SKIP() << "real libnccl not loadable: " << dlerror();
  using Fn = const char* (*)(ncclResult_t);
  auto fn = reinterpret_cast<Fn>(dlsym(real, "ncclGetErrorString"));
  ASSERT_NE(fn, nullptr);
  for (int r = 0; r <= ncclNumResults; ++r) {
    EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(r)), fn(static_cast<ncclResult_t>(r))) << r;
  }
}

class HostcclSingleRank : public ::testing::Test {
 protected:
  void SetUp() override {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comm_, 1, id, 0), ncclSuccess);
    ASSERT_EQ(hostcclStreamCreate(&stream_), ncclSuccess);
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
    }
    hostcclStreamDestroy(stream_);
  }
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<float> a_ = std::vector<float>(16, 2.0f), b_ = std::vector<float>(16, 0.0f);
};

TEST_F(HostcclSingleRank, OneRankCollectivesCopyTheContribution) {
  ASSERT_EQ(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclAvg, comm_, stream_), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(stream_), ncclSuccess);
  EXPECT_EQ(b_[15], 2.0f);
  int count = 0, rank = -1, dev = -1;
  EXPECT_EQ(ncclCommCount(comm_, &count), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comm_, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(comm_, &dev), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(dev, 0);
}

TEST_F(HostcclSingleRank, ArgumentErrorsNameTheArgument) {
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, nullptr, stream_), ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(nullptr), HasSubstr("comm is NULL"));
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), 16, static_cast<ncclDataType_t>(42), ncclSum, comm_, stream_),
            ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("datatype=42"));
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat8e4m3, ncclSum, comm_, stream_), ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("ncclFloat8e4m3"));
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, static_cast<ncclRedOp_t>(77), comm_, stream_),
            ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("op=77"));
  EXPECT_EQ(ncclBroadcast(a_.data(), b_.data(), 16, ncclFloat, 1, comm_, stream_), ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("root=1"));
  EXPECT_EQ(ncclSend(a_.data(), 16, ncclFloat, -1, comm_, stream_), ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("peer=-1"));
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), SIZE_MAX / 2, ncclFloat, ncclSum, comm_, stream_),
            ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("overflows"));
  EXPECT_EQ(ncclAllReduce(nullptr, b_.data(), 16, ncclFloat, ncclSum, comm_, stream_), ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("sendbuff is NULL"));
  int fake = 0;
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, comm_, reinterpret_cast<cudaStream_t>(&fake)),
            ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("not a live hostccl stream"));
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), 0, ncclFloat, ncclSum, comm_, stream_), ncclSuccess) << "count 0";
  EXPECT_EQ(ncclRedOpDestroy(ncclSum, comm_), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

TEST_F(HostcclSingleRank, UseAfterDestroyIsRejected) {
  ASSERT_EQ(ncclCommDestroy(comm_), ncclSuccess);
  ncclComm_t stale = comm_;
  comm_ = nullptr;
  int count = 0;
  EXPECT_EQ(ncclCommCount(stale, &count), ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(nullptr), HasSubstr("not a live hostccl communicator"));
  EXPECT_EQ(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, stale, stream_), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(stale), ncclInvalidArgument);
}

TEST_F(HostcclSingleRank, UnsupportedCallsAreInvalidUsage) {
  ncclWindow_t win;
  EXPECT_EQ(ncclCommWindowRegister(comm_, a_.data(), 64, &win, 0), ncclInvalidUsage);
  EXPECT_THAT(ncclGetLastError(comm_), HasSubstr("not supported on hostccl"));
  EXPECT_EQ(ncclCommRevoke(comm_, 0), ncclInvalidUsage);
  ncclComm_t shrunk;
  EXPECT_EQ(ncclCommShrink(comm_, nullptr, 0, &shrunk, nullptr, 0), ncclInvalidUsage);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclInvalidUsage);
  void* handle = nullptr;
  EXPECT_EQ(ncclCommRegister(comm_, a_.data(), 64, &handle), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(comm_, handle), ncclSuccess);
  void* mem = nullptr;
  EXPECT_EQ(ncclMemAlloc(&mem, 1000), ncclSuccess);
  EXPECT_NE(mem, nullptr);
  EXPECT_EQ(ncclMemFree(mem), ncclSuccess);
}

TEST(HostcclApi, BadConfigIsRejected) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 5;
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(nullptr), HasSubstr("config->blocking=5"));
  ncclConfig_t raw{};
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &raw), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
}

TEST(HostcclApi, InitAllAndOneThreadDrivingEveryRank) {
  constexpr int kRanks = 3;
  ncclComm_t comms[kRanks];
  int devs[kRanks] = {4, 5, 6};
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, devs), ncclSuccess);
  std::vector<std::vector<int>> in(kRanks, std::vector<int>(100000)), out(kRanks, std::vector<int>(100000));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < in[r].size(); ++i) in[r][i] = r + static_cast<int>(i % 5);
  }
  // Every rank on the default stream, all issued by this thread in one group.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(in[r].data(), out[r].data(), in[r].size(), ncclInt32, ncclSum, comms[r], nullptr),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(nullptr), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < out[r].size(); i += 997) ASSERT_EQ(out[r][i], 3 + 3 * static_cast<int>(i % 5));
    int dev = -1;
    ncclCommCuDevice(comms[r], &dev);
    EXPECT_EQ(dev, devs[r]);
  }
  for (auto c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(HostcclApi, GroupedInitFromOneThread) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c0 = nullptr, c1 = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&c0, 2, id, 0), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&c1, 2, id, 1), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ncclResult_t s0, s1;
  ASSERT_EQ(ncclCommGetAsyncError(c0, &s0), ncclSuccess);
  ASSERT_EQ(ncclCommGetAsyncError(c1, &s1), ncclSuccess);
  EXPECT_EQ(s0, ncclSuccess);
  EXPECT_EQ(s1, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(c0), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(c1), ncclSuccess);
}

TEST(HostcclApi, PreMulSumDeviceScalarIsReadWhenTheOpRuns) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  double scalar[2] = {1, 1};
  ncclRedOp_t ops[2];
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[r], &scalar[r], ncclFloat64, ncclScalarDevice, comms[r]), ncclSuccess);
  }
  scalar[0] = scalar[1] = 5;  // after creation, before the launch
  std::vector<double> in0(1000, 1), in1(1000, 2), out0(1000), out1(1000);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(in0.data(), out0.data(), 1000, ncclFloat64, ops[0], comms[0], nullptr), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(in1.data(), out1.data(), 1000, ncclFloat64, ops[1], comms[1], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(nullptr), ncclSuccess);
  EXPECT_EQ(out0[999], 15.0);
  EXPECT_EQ(out1[0], 15.0);
  EXPECT_EQ(ncclAllReduce(in0.data(), out0.data(), 1000, ncclFloat32, ops[0], comms[0], nullptr), ncclInvalidArgument)
      << "an operator is tied to its datatype";
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ncclRedOpDestroy(ops[r], comms[r]), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  }
}

TEST(HostcclApi, AbortDuringAnOperationInFlightReturns) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  std::vector<float> in(1 << 20, 1.0f), out(1 << 20);
  // Rank 1 never joins, so rank 0's AllReduce stays in flight.
  ASSERT_EQ(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, comms[0], s), ncclSuccess);
  EXPECT_EQ(hostcclStreamQuery(s), ncclInProgress);
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(hostcclStreamSynchronize(s), ncclSuccess) << "the stream moves past the aborted operation";
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
  hostcclStreamDestroy(s);
}

}  // namespace
