#include "interpose/annotations.h"

#include <thread>

#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

// Only the tag-stack calls: they touch no NCCL and no shim runtime.
const trirace_api_v1_t& Api() { return *AnnotationApi(); }

TEST(AnnotationsTest, TheTableIsComplete) {
  const trirace_api_v1_t& api = Api();
  EXPECT_EQ(api.size, sizeof(trirace_api_v1_t));
  EXPECT_EQ(api.version, static_cast<uint32_t>(TRIRACE_API_VERSION));
  EXPECT_NE(api.push_tag, nullptr);
  EXPECT_NE(api.pop_tag, nullptr);
  EXPECT_NE(api.set_comm_role, nullptr);
  EXPECT_NE(api.iteration_begin, nullptr);
  EXPECT_NE(api.iteration_end, nullptr);
  EXPECT_NE(api.scheduler_active, nullptr);
  EXPECT_NE(api.set_new_comm_role, nullptr);
  ASSERT_NE(api.dense_ahead, nullptr);
  EXPECT_EQ(api.dense_ahead(), 0) << "no pipeline comm noted: DENSE is DENSE";
}

TEST(AnnotationsTest, InnerTagsInheritUnsetFieldsAndPopRestores) {
  EXPECT_EQ(TagDepth(), 0);
  EXPECT_EQ(CurrentTag().layer, TRIRACE_UNSET);
  trirace_tag_t outer = TRIRACE_TAG_INIT;
  outer.layer = 4;
  outer.phase = TRIRACE_PHASE_FORWARD;
  outer.priority = 1;
  ASSERT_EQ(Api().push_tag(&outer), TRIRACE_OK);
  trirace_tag_t inner = TRIRACE_TAG_INIT;
  inner.micro_batch = 3;
  inner.priority = 9;
  ASSERT_EQ(Api().push_tag(&inner), TRIRACE_OK);
  trirace_tag_t t = CurrentTag();
  EXPECT_EQ(t.layer, 4);
  EXPECT_EQ(t.phase, TRIRACE_PHASE_FORWARD);
  EXPECT_EQ(t.micro_batch, 3);
  EXPECT_EQ(t.priority, 9);
  EXPECT_EQ(t.stage, TRIRACE_UNSET);
  ASSERT_EQ(Api().pop_tag(), TRIRACE_OK);
  EXPECT_EQ(CurrentTag().micro_batch, TRIRACE_UNSET);
  EXPECT_EQ(CurrentTag().priority, 1);
  ASSERT_EQ(Api().pop_tag(), TRIRACE_OK);
  EXPECT_EQ(TagDepth(), 0);
}

TEST(AnnotationsTest, MisuseReturnsTheErrorCodesAndIsCounted) {
  const uint64_t before = GetAnnotationCounters().unbalanced_pops;
  EXPECT_EQ(Api().pop_tag(), TRIRACE_ERR_UNBALANCED);
  EXPECT_EQ(GetAnnotationCounters().unbalanced_pops, before + 1);
  EXPECT_EQ(Api().push_tag(nullptr), TRIRACE_ERR_INVALID);
  trirace_tag_t t = TRIRACE_TAG_INIT;
  for (int i = 0; i < kMaxTagDepth; ++i) ASSERT_EQ(Api().push_tag(&t), TRIRACE_OK);
  EXPECT_EQ(Api().push_tag(&t), TRIRACE_ERR_INVALID);
  for (int i = 0; i < kMaxTagDepth; ++i) ASSERT_EQ(Api().pop_tag(), TRIRACE_OK);
  EXPECT_EQ(TagDepth(), 0);
}

TEST(AnnotationsTest, OverlappingIterationsEachEndOnce) {
  OpenIterations open;
  open.Begin(0);
  open.Begin(1);  // 2BW: step 1 begins before step 0 ends
  EXPECT_TRUE(open.End(0));
  open.Begin(2);
  EXPECT_TRUE(open.End(1));
  EXPECT_FALSE(open.End(1)) << "an iteration ends once";
  EXPECT_FALSE(open.End(7)) << "never begun";
  EXPECT_TRUE(open.End(2));
  EXPECT_EQ(open.size(), 0u);
}

TEST(AnnotationsTest, OpenIterationsAreBoundedOldestForgotten) {
  OpenIterations open;
  for (int64_t i = 0; i < static_cast<int64_t>(OpenIterations::kMaxOpen) + 3; ++i) open.Begin(i);
  EXPECT_EQ(open.size(), OpenIterations::kMaxOpen);
  EXPECT_FALSE(open.End(0));
  EXPECT_TRUE(open.End(3));
  open.Begin(5);  // already open: no second entry
  EXPECT_TRUE(open.End(5));
  EXPECT_FALSE(open.End(5));
}

TEST(AnnotationsTest, EachThreadHasItsOwnStack) {
  trirace_tag_t t = TRIRACE_TAG_INIT;
  t.layer = 1;
  ASSERT_EQ(Api().push_tag(&t), TRIRACE_OK);
  int other_layer = 0;
  std::thread([&] { other_layer = CurrentTag().layer; }).join();
  EXPECT_EQ(other_layer, TRIRACE_UNSET);
  EXPECT_EQ(CurrentTag().layer, 1);
  ASSERT_EQ(Api().pop_tag(), TRIRACE_OK);
}

TEST(AnnotationsTest, MergeTakesTheInnerValueWhenSet) {
  trirace_tag_t a = TRIRACE_TAG_INIT, b = TRIRACE_TAG_INIT;
  a.iteration = 5;
  a.traffic_class = TRIRACE_CLASS_DENSE;
  b.traffic_class = TRIRACE_CLASS_P2P;
  trirace_tag_t m = MergeTags(a, b);
  EXPECT_EQ(m.iteration, 5);
  EXPECT_EQ(m.traffic_class, TRIRACE_CLASS_P2P);
}

}  // namespace
}  // namespace trirace::interpose
