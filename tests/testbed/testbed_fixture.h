// Test fixture around tools/testbed/testbed.sh.
//
//   class MyTest : public trirace::testbed::TestbedTest {};
//   TEST_F(MyTest, X) {
//     Testbed tb;
//     UpOrSkip({"--hosts", "2", "--rate", "50mbit"}, &tb);
//     if (IsSkipped() || HasFatalFailure()) return;
//     auto run = Run(tb, {"--ranks-per-host", "1"}, {"/bin/true"});
//   }
//
// UpOrSkip() creates a test bed owned by this test process and skips the
// test (GTEST_SKIP with the script's reason) when the script says it is not
// root (exit 77) or that the kernel lacks what it needs (exit 78). TearDown
// removes every test bed the test made and checks that none of its
// namespaces is left. Test beds have unique names, so tests may run in
// parallel (ctest -j).
#ifndef TRIRACE_TESTS_TESTBED_TESTBED_FIXTURE_H_
#define TRIRACE_TESTS_TESTBED_TESTBED_FIXTURE_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace trirace::testbed {

inline constexpr int kExitNotRoot = 77;
inline constexpr int kExitNoSupport = 78;
inline constexpr int kExitTimeout = 124;

struct Testbed {
  std::string name;
  int hosts = 0;
  std::vector<std::string> addrs;
};

struct RunOutcome {
  testing_support::ProcessResult process;
  std::string out_dir;
  // Contents of rank-<r>.out / .err.
  std::vector<std::string> rank_out, rank_err;
};

// The whole text of a file ("" if it cannot be read).
std::string ReadFile(const std::string& path);
// Names of all network namespaces on the machine.
std::vector<std::string> NetnsNames();
// Namespaces whose name starts with `prefix`.
std::vector<std::string> NetnsWithPrefix(const std::string& prefix);
// `tc -s qdisc show dev <dev>` inside namespace `ns` ("" = the current one).
std::string QdiscStats(const std::string& ns, const std::string& dev);
// Bytes a qdisc reports as sent ("Sent N bytes"), -1 if not found.
long long QdiscSentBytes(const std::string& stats);
// Links, addresses, routes and qdiscs of the namespace this process is in.
std::string CallerNamespaceState();
// testbed.sh with arguments.
testing_support::ProcessResult Script(const std::vector<std::string>& args, int timeout_ms = 60000);

class TestbedTest : public ::testing::Test {
 protected:
  void TearDown() override;

  // Creates a test bed (flags as for `testbed.sh up`), or skips the test.
  void UpOrSkip(const std::vector<std::string>& flags, Testbed* tb);
  // `testbed.sh run --name <tb> <flags> --out <fresh dir> -- <cmd>`.
  RunOutcome Run(const Testbed& tb, const std::vector<std::string>& flags,
                 const std::vector<std::string>& cmd, int timeout_ms = 120000);

  std::vector<std::string> made_;  // test beds to remove
  std::vector<std::string> dirs_;  // temp folders to remove
};

}  // namespace trirace::testbed

#endif  // TRIRACE_TESTS_TESTBED_TESTBED_FIXTURE_H_
