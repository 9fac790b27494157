#include "interpose/comm/config_copy.h"

#include <cstddef>
#include <cstring>

#include "gtest/gtest.h"

namespace trirace::interpose {
namespace {

TEST(ConfigCopyTest, ANullConfigGivesTheInitializer) {
  auto c = CopyConfig(nullptr);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->size, sizeof(ncclConfig_t));
  EXPECT_EQ(c->magic, 0xcafebeefu);
  EXPECT_EQ(c->blocking, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(c->trafficClass, NCCL_CONFIG_UNDEF_INT);
}

TEST(ConfigCopyTest, TheCallersFieldsAreKeptAndItsStructUntouched) {
  ncclConfig_t caller = NCCL_CONFIG_INITIALIZER;
  caller.blocking = 0;
  caller.netName = "Socket";
  caller.nvlinkCentricSched = 1;
  const ncclConfig_t before = caller;
  auto c = CopyConfig(&caller);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->blocking, 0);
  EXPECT_STREQ(c->netName, "Socket");
  EXPECT_EQ(c->nvlinkCentricSched, 1);
  c->trafficClass = 3;
  EXPECT_EQ(std::memcmp(&before, &caller, sizeof(caller)), 0);
}

TEST(ConfigCopyTest, AnOlderSmallerConfigIsNotReadPastItsSize) {
  // A caller built against a header whose struct ended after splitShare.
  struct Older {
    ncclConfig_t head;
    unsigned char poison[64];
  } older;
  std::memset(&older, 0x7f, sizeof(older));
  const size_t old_size = offsetof(ncclConfig_t, trafficClass);
  older.head.size = old_size;
  older.head.magic = 0xcafebeef;
  older.head.version = NCCL_VERSION(2, 18, 0);
  older.head.blocking = 1;
  auto c = CopyConfig(&older.head);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->blocking, 1);
  EXPECT_EQ(c->size, sizeof(ncclConfig_t));
  // Past the caller's size: the initializer's values, not the poison.
  EXPECT_EQ(c->trafficClass, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(c->nvlinkCentricSched, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(c->version, static_cast<unsigned int>(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)));
}

TEST(ConfigCopyTest, AnUninitialisedConfigIsLeftForNcclToReject) {
  ncclConfig_t bad;
  std::memset(&bad, 0, sizeof(bad));
  bad.size = sizeof(bad);
  EXPECT_FALSE(CopyConfig(&bad).has_value());
  bad.magic = 0xcafebeef;
  bad.size = 4;
  EXPECT_FALSE(CopyConfig(&bad).has_value());
}

}  // namespace
}  // namespace trirace::interpose
