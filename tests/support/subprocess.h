// Test support: run programs as child processes and capture what they say.
// The one process launcher of the test suites (single programs, and jobs of
// N ranks as processes).
//
//   auto r = testing_support::RunProcess({"/usr/bin/env"}, {{"FOO", "1"}});
//   EXPECT_EQ(r.exit_code, 0);
//   EXPECT_THAT(r.out, HasSubstr("FOO=1"));
//
//   testing_support::ChildGroup ranks(/*timeout_ms=*/60000);
//   for (int r = 0; r < n; ++r) ranks.Start(ArgvOf(r), env);
//   std::vector<testing_support::ProcessResult> results = ranks.Wait();
//
// A child inherits this process's environment with `set` applied on top
// and the names in `unset` removed. stdout and stderr are captured
// separately. Children that run past the group's deadline are killed with
// SIGKILL and reported with timed_out = true.
//
// Thread safety: a ChildGroup is used by one thread.
#ifndef TRIRACE_TESTS_SUPPORT_SUBPROCESS_H_
#define TRIRACE_TESTS_SUPPORT_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace testing_support {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct ProcessResult {
  int exit_code = -1;    // exit status, or 128 + signal number
  bool timed_out = false;
  std::string out;
  std::string err;
};

class ChildGroup {
 public:
  // The deadline for every child: `timeout_ms` from now.
  explicit ChildGroup(int timeout_ms);
  // Kills and reaps any child still running.
  ~ChildGroup();
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

  // Starts `argv` (argv[0] looked up in PATH) and returns its index. A child
  // that cannot start is reported at once: exit code 127, the reason in err.
  int Start(const std::vector<std::string>& argv, const EnvList& set = {},
            const std::vector<std::string>& unset = {});
  // Collects output until `done()` holds, every child has finished, or the
  // deadline passed; returns done().
  bool PumpUntil(const std::function<bool()>& done);
  // What child `index` has said so far (complete once Wait() returned).
  const ProcessResult& result(int index) const { return children_[static_cast<size_t>(index)].result; }
  // Waits for every child, killing those past the deadline; the results in
  // start order.
  std::vector<ProcessResult> Wait();

 private:
  struct Child {
    pid_t pid = -1;
    int out_fd = -1;
    int err_fd = -1;
    bool exited = false;
    ProcessResult result;
  };
  // Reads what the open pipes have for up to `wait_ms`; closes them at EOF.
  void Pump(int wait_ms);
  // Reaps children whose pipes are closed (blocking for those).
  void Reap();
  bool AllDone() const;
  void KillRemaining();

  std::chrono::steady_clock::time_point deadline_;
  std::vector<Child> children_;
};

// One program to completion (a ChildGroup of one).
ProcessResult RunProcess(const std::vector<std::string>& argv, const EnvList& set = {},
                         const std::vector<std::string>& unset = {}, int timeout_ms = 60000);

// A fresh empty directory under TMPDIR (or /tmp), removed by the caller.
std::string MakeTempDir(const std::string& prefix);

}  // namespace testing_support

#endif  // TRIRACE_TESTS_SUPPORT_SUBPROCESS_H_
