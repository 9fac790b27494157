#include "common/process_info.h"

#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace trirace {
namespace {

TEST(ProcessInfoTest, ExpandsHostPidRankAndPercent) {
  PatternValues v{"node7", 4242, 3};
  EXPECT_EQ(ExpandPathPattern("/tmp/tr.%h.%p.%r.log", v), "/tmp/tr.node7.4242.3.log");
  EXPECT_EQ(ExpandPathPattern("100%%-%x-%", v), "100%-%x-%");
  v.rank.reset();
  EXPECT_EQ(ExpandPathPattern("r%r", v), "r%r");
}

TEST(ProcessInfoTest, DefaultsToThisProcess) {
  EXPECT_EQ(ExpandPathPattern("%p"), std::to_string(getpid()));
  EXPECT_EQ(ExpandPathPattern("%h"), HostName());
  EXPECT_FALSE(HostName().empty());
  EXPECT_EQ(HostName().find('.'), std::string::npos);
}

TEST(ProcessInfoTest, ThreadIdsDiffer) {
  int main_tid = ThreadId();
  EXPECT_EQ(main_tid, getpid());
  int other = 0;
  std::thread([&] { other = ThreadId(); }).join();
  EXPECT_NE(other, main_tid);
}

}  // namespace
}  // namespace trirace
