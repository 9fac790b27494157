// libtrirace.so over the real NCCL 2.28 installed on the machine (no GPU
// needed): what the library answers is what the program sees.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::ProcessResult;
using testing_support::RunProcess;

const std::vector<std::string> kUnset = {"TRIRACE_MODE", "TRIRACE_TRACE", "TRIRACE_NCCL_LIBRARY", "TRIRACE_DEBUG",
                                         "TRIRACE_DEBUG_FILE"};

TEST(RealNcclTest, ResultsAreThoseOfTheLibraryWithAndWithoutTheShim) {
  const std::string lib = REAL_NCCL_LIBRARY;
  if (lib.empty()) GTEST_SKIP() << "no real libnccl.so.2 was found at configure time (NCCL_LIBRARY)";
  std::vector<std::string> unset = kUnset;
  unset.push_back("LD_PRELOAD");
  ProcessResult plain = RunProcess({NCCL_PROBE, "real", lib}, {}, unset, 120000);
  ProcessResult shim = RunProcess({NCCL_PROBE, "real", lib}, {{"LD_PRELOAD", SHIM_PATH}, {"TRIRACE_DEBUG", "INFO"}},
                                  kUnset, 120000);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(shim.exit_code, 0) << shim.err;
  EXPECT_EQ(plain.out, shim.out);
  EXPECT_THAT(plain.out, HasSubstr("rc GetVersion=0 version=22809"));
  EXPECT_THAT(plain.out, HasSubstr("rc GetUniqueId=0 filled=1"));
  // Without a GPU, init fails inside NCCL; the shim returns that same code.
  EXPECT_THAT(plain.out, Not(HasSubstr("rc CommInitRank=0")));
  // The shim found the library the program had loaded, and said so.
  EXPECT_THAT(shim.err, HasSubstr("real NCCL 2.28.9 (code 22809) at " + lib));
  EXPECT_THAT(shim.err, HasSubstr("already loaded libnccl.so.2"));
}

}  // namespace
