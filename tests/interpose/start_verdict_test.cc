#include "interpose/start_verdict.h"

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nccl.h"

namespace trirace::interpose {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int kHeaders = NCCL_MAJOR * 10000 + NCCL_MINOR * 100;

TEST(PlanForNcclTest, SaysWhatEachReleaseAllows) {
  const NcclPlan known = PlanForNccl(kHeaders + 9);
  EXPECT_TRUE(known.schedulable);
  EXPECT_TRUE(known.config_layout_known);
  EXPECT_EQ(known.why, "");

  const NcclPlan old = PlanForNccl(21800);
  EXPECT_FALSE(old.schedulable);
  EXPECT_THAT(old.why, HasSubstr("2.18.0 is older than 2.19.0"));
  EXPECT_EQ(old.fix, "use NCCL 2.19.0 or newer");

  const NcclPlan newer = PlanForNccl(kHeaders + 300);
  EXPECT_TRUE(newer.schedulable);
  EXPECT_FALSE(newer.config_layout_known);
  EXPECT_THAT(newer.why, HasSubstr("is newer than the"));

  const NcclPlan major = PlanForNccl(30000);
  EXPECT_FALSE(major.schedulable);
  EXPECT_THAT(major.fix, HasSubstr("NCCL 3.x headers"));
}

// The blockers are checked in the shim's order, and the first one names the
// reason and its fix.
TEST(DecideStartTest, TheFirstBlockerGivesTheReason) {
  const absl::Status ok = absl::OkStatus();
  const absl::Status no_gpu = absl::FailedPreconditionError("no CUDA driver (libcuda.so.1)");
  const absl::Status one_queue = absl::FailedPreconditionError("CUDA_DEVICE_MAX_CONNECTIONS=1 gives one queue");
  const NcclPlan good = PlanForNccl(kHeaders);
  const NcclPlan old = PlanForNccl(21800);

  StartVerdict v = DecideStart(ShimMode::kSchedule, PolicyKind::kTrirace, good, ok, ok);
  EXPECT_EQ(v.mode, ShimMode::kSchedule);
  EXPECT_EQ(v.why, "");

  v = DecideStart(ShimMode::kSchedule, PolicyKind::kTrirace, old, no_gpu, one_queue);
  EXPECT_EQ(v.mode, ShimMode::kObserve);
  EXPECT_THAT(v.why, HasSubstr("older than"));

  v = DecideStart(ShimMode::kSchedule, PolicyKind::kTrirace, good, no_gpu, one_queue);
  EXPECT_EQ(v.mode, ShimMode::kObserve);
  EXPECT_EQ(v.why, "no CUDA driver (libcuda.so.1)");
  EXPECT_THAT(v.fix, HasSubstr("libcuda.so.1"));

  v = DecideStart(ShimMode::kSchedule, PolicyKind::kTrirace, good, ok, one_queue);
  EXPECT_EQ(v.mode, ShimMode::kObserve);
  EXPECT_EQ(v.fix, kGatedLaunchFix);

  // Observe mode asked for needs none of them.
  v = DecideStart(ShimMode::kObserve, PolicyKind::kFifo, old, no_gpu, one_queue);
  EXPECT_EQ(v.mode, ShimMode::kObserve);
  EXPECT_EQ(v.why, "");
}

TEST(VerdictLineTest, OneLineForEachOutcome) {
  StartVerdict v = DecideStart(ShimMode::kSchedule, PolicyKind::kTrirace, PlanForNccl(kHeaders), absl::OkStatus(),
                               absl::OkStatus());
  v.occupancy = "plugin occupancy";
  EXPECT_EQ(VerdictLine(v, 8), "TriRace: schedule mode, trirace policy, 8 ranks, plugin occupancy");
  EXPECT_EQ(VerdictLine(v, 0), "TriRace: schedule mode, trirace policy, plugin occupancy");

  v = DecideStart(ShimMode::kSchedule, PolicyKind::kPriority, PlanForNccl(kHeaders), absl::OkStatus(),
                  absl::FailedPreconditionError("CUDA_DEVICE_MAX_CONNECTIONS=1 gives one queue"));
  EXPECT_EQ(VerdictLine(v, 2), std::string("TriRace: OBSERVE ONLY, 2 ranks, because CUDA_DEVICE_MAX_CONNECTIONS=1 "
                                           "gives one queue; fix: ") + kGatedLaunchFix);

  v = DecideStart(ShimMode::kObserve, PolicyKind::kTrirace, PlanForNccl(kHeaders), absl::OkStatus(), absl::OkStatus());
  EXPECT_THAT(VerdictLine(v, 1), StartsWith("TriRace: observe mode (TRIRACE_MODE=observe), 1 rank:"));

  v = DecideStart(ShimMode::kSchedule, PolicyKind::kFifo, PlanForNccl(kHeaders + 300), absl::OkStatus(),
                  absl::OkStatus());
  EXPECT_THAT(VerdictLine(v, 4), HasSubstr("fifo policy, 4 ranks, no occupancy input; ncclConfig_t left as the"));
}

TEST(LauncherRankTest, TheFirstVariableThatIsANumberCounts) {
  for (const char* name : {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "WORLD_SIZE", "SLURM_NTASKS",
                           "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    unsetenv(name);
  }
  EXPECT_FALSE(LauncherRank().has_value());
  setenv("SLURM_PROCID", "3", 1);
  EXPECT_EQ(LauncherRank(), 3);
  setenv("RANK", "x", 1);  // not a number: the next one counts
  EXPECT_EQ(LauncherRank(), 3);
  setenv("RANK", "0", 1);
  EXPECT_EQ(LauncherRank(), 0);
  setenv("PMI_SIZE", "16", 1);
  EXPECT_EQ(LauncherWorldSize(), 16);
  setenv("WORLD_SIZE", "-2", 1);
  EXPECT_EQ(LauncherWorldSize(), 16);
  for (const char* name : {"RANK", "SLURM_PROCID", "PMI_SIZE", "WORLD_SIZE"}) unsetenv(name);
}

}  // namespace
}  // namespace trirace::interpose
