#include "common/hash.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace trirace {
namespace {

// Published FNV-1a test vectors (the empty string gives the offset basis).
TEST(HashTest, MatchesTheFnv1aReferenceValues) {
  EXPECT_EQ(Fnv1a64Text(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64Text("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64Text("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(Fnv1a32("", 0), 0x811c9dc5u);
  EXPECT_EQ(Fnv1a32("a", 1), 0xe40c292cu);
  EXPECT_EQ(Fnv1a32("foobar", 6), 0xbf9cf968u);
}

TEST(HashTest, ChainingEqualsHashingTheConcatenation) {
  EXPECT_EQ(Fnv1a64Text("bar", Fnv1a64Text("foo")), Fnv1a64Text("foobar"));
  EXPECT_EQ(Fnv1a64("bar", 3, Fnv1a64("foo", 3)), Fnv1a64Text("foobar"));
  const uint64_t a = 7, b = 9;
  const uint64_t both[2] = {a, b};
  EXPECT_EQ(Fnv1a64Value(b, Fnv1a64Value(a)), Fnv1a64(both, sizeof(both)));
  EXPECT_NE(Fnv1a64Value(a), Fnv1a64Value(b));
}

}  // namespace
}  // namespace trirace
