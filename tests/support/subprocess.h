// Test support: run a program as a child process and capture what it says.
//
//   auto r = testing_support::RunProcess({"/usr/bin/env"}, {{"FOO", "1"}});
//   EXPECT_EQ(r.exit_code, 0);
//   EXPECT_THAT(r.out, HasSubstr("FOO=1"));
//
// The child inherits this process's environment with `set` applied on top
// and the names in `unset` removed. stdout and stderr are captured
// separately. A child that runs longer than `timeout_ms` is killed with
// SIGKILL and reported with timed_out = true.
#ifndef TRIRACE_TESTS_SUPPORT_SUBPROCESS_H_
#define TRIRACE_TESTS_SUPPORT_SUBPROCESS_H_

#include <string>
#include <utility>
#include <vector>

namespace testing_support {

struct ProcessResult {
  int exit_code = -1;    // exit status, or 128 + signal number
  bool timed_out = false;
  std::string out;
  std::string err;
};

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& set = {},
                         const std::vector<std::string>& unset = {}, int timeout_ms = 60000);

// A fresh empty directory under TMPDIR (or /tmp), removed by the caller.
std::string MakeTempDir(const std::string& prefix);

}  // namespace testing_support

#endif  // TRIRACE_TESTS_SUPPORT_SUBPROCESS_H_
