#include "interpose/comm/comm_state.h"

#include <cstring>

#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

TEST(CommStateTest, IdsAreEqualForEqualInputsAndDifferOtherwise) {
  ncclUniqueId a, b;
  std::memset(&a, 1, sizeof(a));
  std::memset(&b, 1, sizeof(b));
  EXPECT_EQ(CommIdFromUniqueIds(&a, 1), CommIdFromUniqueIds(&b, 1));
  b.internal[100] = 2;
  EXPECT_NE(CommIdFromUniqueIds(&a, 1), CommIdFromUniqueIds(&b, 1));
  const uint64_t parent = CommIdFromUniqueIds(&a, 1);
  EXPECT_EQ(CommIdForSplit(parent, 0, 3), CommIdForSplit(parent, 0, 3));
  EXPECT_NE(CommIdForSplit(parent, 0, 3), CommIdForSplit(parent, 0, 4));
  EXPECT_NE(CommIdForSplit(parent, 0, 3), CommIdForSplit(parent, 1, 3));
  const int excluded[] = {1, 3};
  EXPECT_NE(CommIdForShrink(parent, 0, excluded, 2), CommIdForSplit(parent, 0, 0));
  EXPECT_NE(CommIdForShrink(parent, 0, excluded, 2), 0u);
  EXPECT_EQ(CommIdHex(0x1234).size(), 16u);
}

TEST(CommStateTest, RoleIsInferredFromTraffic) {
  OpStats p2p;
  EXPECT_EQ(InferRole(p2p), TRIRACE_ROLE_UNKNOWN);
  CountOp(p2p, NcclFunc::kSend, TrafficClass::kP2P, 100);
  CountOp(p2p, NcclFunc::kRecv, TrafficClass::kP2P, 100);
  EXPECT_EQ(InferRole(p2p), TRIRACE_ROLE_PIPELINE);

  OpStats dense;
  CountOp(dense, NcclFunc::kAllReduce, TrafficClass::kDense, 1024);
  EXPECT_EQ(InferRole(dense), TRIRACE_ROLE_UNKNOWN);  // small buffers decide nothing
  CountOp(dense, NcclFunc::kAllReduce, TrafficClass::kDense, kLargeDenseBytes);
  CountOp(dense, NcclFunc::kBroadcast, TrafficClass::kOther, 8);
  EXPECT_EQ(InferRole(dense), TRIRACE_ROLE_DATA_PARALLEL);

  OpStats sparse;
  CountOp(sparse, NcclFunc::kAlltoAll, TrafficClass::kSparse, 1 << 22);
  CountOp(sparse, NcclFunc::kAllReduce, TrafficClass::kDense, 1 << 22);
  EXPECT_EQ(InferRole(sparse), TRIRACE_ROLE_EXPERT);
}

TEST(CommStateTest, AnAnnotatedRoleWins) {
  CommState s;
  CountOp(s.stats, NcclFunc::kSend, TrafficClass::kP2P, 1);
  bool annotated = true;
  EXPECT_EQ(EffectiveRole(s, &annotated), TRIRACE_ROLE_PIPELINE);
  EXPECT_FALSE(annotated);
  s.annotated_role.store(TRIRACE_ROLE_TENSOR);
  EXPECT_EQ(EffectiveRole(s, &annotated), TRIRACE_ROLE_TENSOR);
  EXPECT_TRUE(annotated);
}

TEST(CommStateTest, ClassComesFromTheTagThenTheRoleThenTheFunction) {
  EXPECT_EQ(ClassifyOp(NcclFunc::kAllReduce, TRIRACE_ROLE_PIPELINE, TRIRACE_CLASS_SPARSE), TrafficClass::kSparse);
  EXPECT_EQ(ClassifyOp(NcclFunc::kAllReduce, TRIRACE_ROLE_PIPELINE, TRIRACE_CLASS_AUTO), TrafficClass::kP2P);
  EXPECT_EQ(ClassifyOp(NcclFunc::kBroadcast, TRIRACE_ROLE_DATA_PARALLEL, TRIRACE_UNSET), TrafficClass::kDense);
  EXPECT_EQ(ClassifyOp(NcclFunc::kRecv, TRIRACE_ROLE_UNKNOWN, TRIRACE_UNSET), TrafficClass::kP2P);
  EXPECT_EQ(ClassifyOp(NcclFunc::kAlltoAll, TRIRACE_ROLE_UNKNOWN, TRIRACE_UNSET), TrafficClass::kSparse);
  EXPECT_EQ(ClassifyOp(NcclFunc::kReduceScatter, TRIRACE_ROLE_UNKNOWN, TRIRACE_UNSET), TrafficClass::kDense);
  EXPECT_EQ(ClassifyOp(NcclFunc::kGather, TRIRACE_ROLE_TENSOR, TRIRACE_UNSET), TrafficClass::kOther);
}

}  // namespace
}  // namespace trirace::interpose
