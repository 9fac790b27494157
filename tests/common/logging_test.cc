#include "common/logging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "common/env_guard.h"
#include "common/process_info.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace trirace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

struct Captured {
  std::mutex mu;
  std::vector<std::string> lines;
};

void CaptureSink(void* ctx, LogLevel level, Subsys subsys, const char*, int, absl::string_view msg) {
  auto* c = static_cast<Captured*>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->lines.push_back(absl::StrCat(LogLevelName(level), " ", SubsysName(subsys), " ", msg));
}

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { log::SetSink(CaptureSink, &captured_); }
  void TearDown() override { log::SetSink(nullptr, nullptr); }
  Captured captured_;
  EnvGuard env_;
};

TEST_F(LoggingTest, LevelFiltersLines) {
  env_.Set("TRIRACE_DEBUG", "INFO").Unset("TRIRACE_DEBUG_SUBSYS").Apply();
  TRIRACE_WARN(NET, "w%d", 1);
  TRIRACE_INFO(NET, "i%d", 2);
  TRIRACE_TRACE(NET, "t%d", 3);
  EXPECT_THAT(captured_.lines, ElementsAre("WARN NET w1", "INFO NET i2"));
  EXPECT_FALSE(log::Enabled(LogLevel::kTRACE, Subsys::kNET));

  captured_.lines.clear();
  env_.Set("TRIRACE_DEBUG", "NONE").Apply();
  TRIRACE_WARN(NET, "hidden");
  EXPECT_TRUE(captured_.lines.empty());

  env_.Set("TRIRACE_DEBUG", "TRACE").Apply();
  TRIRACE_TRACE(SCHED, "all");
  EXPECT_THAT(captured_.lines, ElementsAre("TRACE SCHED all"));
}

TEST_F(LoggingTest, WarnIsOnByDefault) {
  env_.Unset("TRIRACE_DEBUG").Unset("TRIRACE_DEBUG_SUBSYS").Apply();
  EXPECT_TRUE(log::Enabled(LogLevel::kWARN, Subsys::kINIT));
  EXPECT_FALSE(log::Enabled(LogLevel::kINFO, Subsys::kINIT));
}

TEST_F(LoggingTest, SubsystemMaskSelectsAndExcludes) {
  env_.Set("TRIRACE_DEBUG", "INFO").Set("TRIRACE_DEBUG_SUBSYS", "NET,topo").Apply();
  TRIRACE_INFO(NET, "a");
  TRIRACE_INFO(SCHED, "b");
  TRIRACE_INFO(TOPO, "c");
  EXPECT_THAT(captured_.lines, ElementsAre("INFO NET a", "INFO TOPO c"));

  captured_.lines.clear();
  env_.Set("TRIRACE_DEBUG_SUBSYS", "^NET").Apply();
  TRIRACE_INFO(NET, "a");
  TRIRACE_INFO(SCHED, "b");
  EXPECT_THAT(captured_.lines, ElementsAre("INFO SCHED b"));
}

TEST_F(LoggingTest, UnknownSubsystemWarnsAndLogsEverything) {
  auto mask = log::ParseSubsysMask("NET,BOGUS");
  ASSERT_FALSE(mask.ok());
  EXPECT_THAT(std::string(mask.status().message()), HasSubstr("\"BOGUS\""));
  env_.Set("TRIRACE_DEBUG", "INFO").Set("TRIRACE_DEBUG_SUBSYS", "NET,BOGUS").Apply();
  ASSERT_FALSE(captured_.lines.empty());
  EXPECT_THAT(captured_.lines[0], HasSubstr("TRIRACE_DEBUG_SUBSYS"));
  EXPECT_THAT(captured_.lines[0], HasSubstr("BOGUS"));
  EXPECT_TRUE(log::Enabled(LogLevel::kINFO, Subsys::kSCHED));
}

TEST_F(LoggingTest, BadParamValueIsOneWarnThroughTheLogger) {
  env_.Set("TRIRACE_MODE", "sometimes").Unset("TRIRACE_DEBUG").Unset("TRIRACE_DEBUG_SUBSYS").Apply();
  int matching = 0;
  for (const std::string& l : captured_.lines) {
    if (l.find("TRIRACE_MODE=\"sometimes\"") != std::string::npos) ++matching;
  }
  EXPECT_EQ(matching, 1);
  Params::Get();  // a second read does not warn again
  int after = 0;
  for (const std::string& l : captured_.lines) after += l.find("TRIRACE_MODE") != std::string::npos;
  EXPECT_EQ(after, 1);
}

TEST(LoggingFileTest, FileNameSubstitutesHostAndPidAndLinesHaveThePrefix) {
  const std::string dir = testing_support::MakeTempDir("trirace-log-");
  const std::string pattern = dir + "/log.%h.%p.txt";
  {
    EnvGuard env;
    env.Set("TRIRACE_DEBUG_FILE", pattern).Set("TRIRACE_DEBUG", "INFO").Unset("TRIRACE_DEBUG_SUBSYS").Apply();
    TRIRACE_INFO(INIT, "hello %s", "file");
  }
  const std::string expected = dir + "/log." + HostName() + "." + std::to_string(getpid()) + ".txt";
  std::ifstream in(expected);
  ASSERT_TRUE(in.good()) << expected << " was not written";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_THAT(ss.str(), MatchesRegex(".*:[0-9]+:[0-9]+ TriRace INFO INIT hello file\n"));
  EXPECT_THAT(ss.str(), HasSubstr(HostName() + ":" + std::to_string(getpid()) + ":"));
  struct stat st {};
  ASSERT_EQ(stat(expected.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "a log is the job's: only its uid reads it";
  std::filesystem::remove_all(dir);
}

// NOTE lines show at the default level (and to a sink as WARN), never at NONE.
TEST(LoggingFileTest, NoteLinesShowWheneverLoggingIsOn) {
  const std::string dir = testing_support::MakeTempDir("trirace-note-");
  const std::string path = dir + "/log.txt";
  {
    EnvGuard env;
    env.Set("TRIRACE_DEBUG_FILE", path).Unset("TRIRACE_DEBUG").Unset("TRIRACE_DEBUG_SUBSYS").Apply();
    TRIRACE_NOTE(INIT, "verdict %d", 1);
    TRIRACE_INFO(INIT, "not at the default level");
    env.Set("TRIRACE_DEBUG", "NONE").Apply();
    TRIRACE_NOTE(INIT, "verdict %d", 2);
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_THAT(ss.str(), MatchesRegex(".*:[0-9]+:[0-9]+ TriRace NOTE INIT verdict 1\n"));
  std::filesystem::remove_all(dir);
}

TEST_F(LoggingTest, ASinkGetsNoteLinesAsWarn) {
  env_.Unset("TRIRACE_DEBUG").Unset("TRIRACE_DEBUG_SUBSYS").Apply();
  TRIRACE_NOTE(INIT, "seen");
  EXPECT_THAT(captured_.lines, ElementsAre("WARN INIT seen"));
}

}  // namespace
}  // namespace trirace
