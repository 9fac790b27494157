// StartVerdict: what the shim does in this process, decided once at
// start-up, and the one line that says so.
//
// A user must be able to tell from a running job which mode it really got.
// Every fallback (an NCCL release the shim cannot vouch for, no device
// backend, CUDA_DEVICE_MAX_CONNECTIONS=1, ...) leaves its WARN among
// NCCL's lines; the verdict gathers them into one line, written once per
// job (by the process that is rank 0: the launcher's RANK / SLURM_PROCID /
// OMPI_COMM_WORLD_RANK / PMI_RANK, else rank 0 of its first communicator),
// at the default log level, and into the trace's metadata:
//
//   TriRace: schedule mode, trirace policy, 8 ranks, plugin occupancy
//   TriRace: OBSERVE ONLY, because CUDA_DEVICE_MAX_CONNECTIONS=1 ...; fix: ...
//
// `trirace doctor` gives the same verdict before a job starts, from the same
// functions (PlanForNccl, GatedLaunchPrecondition).
//
// Thread safety: the functions are pure, apart from GatedLaunchPrecondition
// and LauncherRank, which read the environment.
#ifndef TRIRACE_INTERPOSE_START_VERDICT_H_
#define TRIRACE_INTERPOSE_START_VERDICT_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "common/params.h"
#include "common/qdisc.h"

namespace trirace::interpose {

// What a real NCCL of version `code` allows (real_nccl.h's SupportOf, with
// the reason in words).
struct NcclPlan {
  bool schedulable = true;           // false: observe only
  bool config_layout_known = true;   // false: ncclConfig_t is left as the caller made it
  std::string why;                   // when !schedulable or !config_layout_known
  std::string fix;                   // when !schedulable
};
NcclPlan PlanForNccl(int code);

// OK when the gated launch can run in this process; else why not
// (CUDA_DEVICE_MAX_CONNECTIONS=1 gives the GPU one hardware queue).
absl::Status GatedLaunchPrecondition();
// What to change when GatedLaunchPrecondition fails.
inline constexpr const char* kGatedLaunchFix =
    "unset CUDA_DEVICE_MAX_CONNECTIONS or set it above 1 (Megatron-LM sets 1 for its own overlap; TriRace then "
    "observes and still sets trafficClass per role)";

struct StartVerdict {
  ShimMode requested = ShimMode::kOff;  // TRIRACE_MODE
  ShimMode mode = ShimMode::kOff;       // what runs
  std::string why;                      // mode < requested: the reason
  std::string fix;                      // mode < requested: what would change it ("" when nothing can)
  PolicyKind policy = PolicyKind::kTrirace;
  std::string occupancy;                // schedule mode: "plugin occupancy", "no occupancy input", ...
  std::string class_order;              // schedule mode: ClassOrderText(), or "" to leave it out
  std::string notes;                    // e.g. "ncclConfig_t left as the caller made it"
};

// The verdict from what was found, checked in the shim's order: the NCCL
// release, the device backend (`device`: OK, or why there is none), the
// gated launch's precondition (`gated`). Schedule mode asked for and
// blocked by one of them runs as observe mode, with that one's reason and
// fix. `occupancy` is left empty for the caller.
StartVerdict DecideStart(ShimMode requested, PolicyKind policy, const NcclPlan& nccl, const absl::Status& device,
                         const absl::Status& gated);

// Where schedule mode enforces the class order P2P > SPARSE > DENSE
// (DESIGN.md, "Where the class order is enforced"), by the rule
// NetClassPriorityEnabledFor(marks) applies: "network (...)" where the
// net plugin's marks are on, "gate only (...)" where the launch gate alone
// orders the classes; the parentheses say why.
std::string ClassOrderText(PolicyKind policy, const MarksFinding& marks);

// The verdict's line, without a newline. `nranks` <= 0 leaves the count out.
std::string VerdictLine(const StartVerdict& verdict, int nranks);

// This process's rank in the job as its launcher set it (RANK, SLURM_PROCID,
// OMPI_COMM_WORLD_RANK, PMI_RANK: the first that is a number >= 0), and the
// job's size (WORLD_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE).
std::optional<int> LauncherRank();
std::optional<int> LauncherWorldSize();

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_START_VERDICT_H_
