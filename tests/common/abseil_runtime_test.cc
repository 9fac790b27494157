// ConfigureAbseilRuntime: in a release build it turns off Abseil's lock
// graph check (a lock-order inversion no longer aborts), unless
// TRIRACE_ABSL_DEADLOCK_CHECK=1; a debug build leaves it alone. Each case
// runs in a death-test child that starts with the check set to abort, so
// the cases do not depend on each other or on what the parent set.
#include "common/abseil_runtime.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "common/env_guard.h"

namespace trirace {
namespace {

// Takes a then b, then b then a: a potential deadlock, which the check
// reports (and, set to kAbort, dies of). One thread, so nothing blocks.
void InvertLockOrder() {
  absl::Mutex a, b;
  {
    absl::MutexLock la(&a);
    absl::MutexLock lb(&b);
  }
  {
    absl::MutexLock lb(&b);
    absl::MutexLock la(&a);
  }
}

#ifdef NDEBUG
constexpr bool kRelease = true;
#else
constexpr bool kRelease = false;
#endif

class AbseilRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // Does this build of Abseil check at all? (Abseil built with NDEBUG does not.)
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
      InvertLockOrder();
      std::_Exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      GTEST_SKIP() << "this Abseil was built without its deadlock check: nothing to turn off";
    }
  }
};

TEST_F(AbseilRuntimeTest, AReleaseBuildTurnsTheLockGraphCheckOff) {
  EnvGuard env;
  env.Unset("TRIRACE_ABSL_DEADLOCK_CHECK").Apply();
  EXPECT_EQ(ConfigureAbseilRuntime(), kRelease);
  auto run = [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
    ConfigureAbseilRuntime();
    InvertLockOrder();
    std::_Exit(0);
  };
  if (kRelease) {
    EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "");
  } else {
    EXPECT_DEATH(run(), "deadlock");
  }
}

TEST_F(AbseilRuntimeTest, TheParamKeepsTheCheck) {
  EnvGuard env;
  env.Set("TRIRACE_ABSL_DEADLOCK_CHECK", "1").Apply();
  EXPECT_FALSE(ConfigureAbseilRuntime());
  EXPECT_DEATH(
      {
        absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
        ConfigureAbseilRuntime();
        InvertLockOrder();
      },
      "deadlock");
  // The check stays on in this process too: leave it as the process started.
}

}  // namespace
}  // namespace trirace
