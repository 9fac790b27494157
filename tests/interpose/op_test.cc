// SplitIsExact (interpose/op.h): which ops the gated launcher may issue as
// chunks without changing a bit of the result.
#include "interpose/op.h"

#include <tuple>

#include "gtest/gtest.h"
#include "interpose/comm/comm_state.h"

namespace trirace::interpose {
namespace {

bool IsInteger(ncclDataType_t t) {
  return t == ncclInt8 || t == ncclUint8 || t == ncclInt32 || t == ncclUint32 || t == ncclInt64 || t == ncclUint64;
}

class SplitIsExactTest
    : public ::testing::TestWithParam<std::tuple<NcclFunc, ncclDataType_t, ncclRedOp_t>> {};

TEST_P(SplitIsExactTest, OnlyDataMovementAndOrderFreeReductionsSplitExactly) {
  const auto [func, type, redop] = GetParam();
  const bool user_op = redop == static_cast<ncclRedOp_t>(ncclNumOps);
  for (const int nranks : {0, 1, 2, 3, 8}) {  // 0: a comm the registry does not know
    SCOPED_TRACE(nranks);
    CommState state;
    state.nranks = nranks;
    Op op;
    op.func = func;
    op.datatype = type;
    op.redop = redop;
    op.state = nranks > 0 ? &state : nullptr;
    bool want = false;
    if (func == NcclFunc::kBroadcast || func == NcclFunc::kBcast) {
      want = true;  // data only, whatever the (unused) redop says
    } else if (func == NcclFunc::kAllReduce || func == NcclFunc::kReduce || func == NcclFunc::kReduceScatter) {
      // Two ranks: one commutative operation per element, exact in any type.
      want = redop == ncclMax || redop == ncclMin || (!user_op && (IsInteger(type) || nranks == 2));
    }
    EXPECT_EQ(SplitIsExact(op), want);
  }
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
