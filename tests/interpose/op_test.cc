// SplitIsExact (interpose/op.h): which ops the gated launcher may issue as
// chunks without changing a bit of the result.
#include "interpose/op.h"

#include <tuple>

#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

bool IsInteger(ncclDataType_t t) {
  return t == ncclInt8 || t == ncclUint8 || t == ncclInt32 || t == ncclUint32 || t == ncclInt64 || t == ncclUint64;
}

class SplitIsExactTest
    : public ::testing::TestWithParam<std::tuple<NcclFunc, ncclDataType_t, ncclRedOp_t>> {};

TEST_P(SplitIsExactTest, OnlyDataMovementAndOrderFreeReductionsSplitExactly) {
  const auto [func, type, redop] = GetParam();
  Op op;
  op.func = func;
  op.datatype = type;
  op.redop = redop;
  bool want = false;
  if (func == NcclFunc::kBroadcast || func == NcclFunc::kBcast) {
    want = true;  // data only, whatever the (unused) redop says
  } else if (func == NcclFunc::kAllReduce || func == NcclFunc::kReduce || func == NcclFunc::kReduceScatter) {
    want = redop == ncclMax || redop == ncclMin || (IsInteger(type) && redop != static_cast<ncclRedOp_t>(ncclNumOps));
  }
  EXPECT_EQ(SplitIsExact(op), want);
}

INSTANTIATE_TEST_SUITE_P(
    Sweep, SplitIsExactTest,
    ::testing::Combine(::testing::Values(NcclFunc::kAllReduce, NcclFunc::kReduce, NcclFunc::kReduceScatter,
                                         NcclFunc::kBroadcast, NcclFunc::kBcast, NcclFunc::kAllGather,
                                         NcclFunc::kSend),
                       ::testing::Values(ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
                                         ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16),
                       // ncclNumOps: the first user-defined op (PreMulSum).
                       ::testing::Values(ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg,
                                         static_cast<ncclRedOp_t>(ncclNumOps))));

}  // namespace
}  // namespace trirace::interpose
