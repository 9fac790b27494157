#include "interpose/start_verdict.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "interpose/real_nccl.h"

namespace trirace::interpose {
namespace {

// The first of `names` set to a number >= 0. The launcher's variables are
// not TriRace parameters: they are read here only, for the verdict.
std::optional<int> FirstNumber(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* text = std::getenv(name);
    int value = -1;
    if (text != nullptr && absl::SimpleAtoi(text, &value) && value >= 0) return value;
  }
  return std::nullopt;
}

}  // namespace

NcclPlan PlanForNccl(int code) {
  NcclPlan plan;
  const std::string version = NcclVersionText(code);
  switch (SupportOf(code)) {
    case NcclSupport::kKnown: break;
    case NcclSupport::kTooOld:
      plan.schedulable = false;
      plan.why = absl::StrFormat("the real NCCL %s is older than %s, the oldest this shim schedules", version,
                                 NcclVersionText(kOldestSupportedNccl));
      plan.fix = absl::StrFormat("use NCCL %s or newer", NcclVersionText(kOldestSupportedNccl));
      break;
    case NcclSupport::kOtherMajor:
      plan.schedulable = false;
      plan.why = absl::StrFormat("the real NCCL %s is not a %d.x release, which this shim was built for", version,
                                 NCCL_MAJOR);
      plan.fix = absl::StrFormat("build TriRace against NCCL %d.x headers", NcclMajor(code));
      break;
    case NcclSupport::kNewerMinor:
      plan.config_layout_known = false;
      plan.why = absl::StrFormat("the real NCCL %s is newer than the %d.%d headers this shim was built with",
                                 version, NCCL_MAJOR, NCCL_MINOR);
      break;
  }
  return plan;
}

absl::Status GatedLaunchPrecondition() {
  const char* conns = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  int value = 0;
  if (conns != nullptr && absl::SimpleAtoi(conns, &value) && value == 1) {
    return absl::FailedPreconditionError(
        "CUDA_DEVICE_MAX_CONNECTIONS=1 gives the GPU one hardware queue, where a closed gate would stall every "
        "stream");
  }
  return absl::OkStatus();
}

StartVerdict DecideStart(ShimMode requested, PolicyKind policy, const NcclPlan& nccl, const absl::Status& device,
                         const absl::Status& gated) {
  StartVerdict v;
  v.requested = v.mode = requested;
  v.policy = policy;
  if (nccl.schedulable && !nccl.config_layout_known) {
    v.notes = "ncclConfig_t left as the caller made it (NCCL newer than the shim's headers)";
  }
  if (requested != ShimMode::kSchedule) return v;
  if (!nccl.schedulable) {
    v.why = nccl.why;
    v.fix = nccl.fix;
  } else if (!device.ok()) {
    v.why = std::string(device.message());
    v.fix = "run where the CUDA driver (libcuda.so.1) and a GPU are visible, or over hostccl";
  } else if (!gated.ok()) {
    v.why = std::string(gated.message());
    v.fix = kGatedLaunchFix;
  } else {
    return v;
  }
  v.mode = ShimMode::kObserve;
  return v;
}

std::string ClassOrderText(PolicyKind policy, const MarksFinding& marks) {
  const bool on = NetClassPriorityEnabledFor(marks);
  switch (ParamChoice<ClassPrioritySetting>()) {
    case ClassPrioritySetting::kOn: return "network (TRIRACE_NET_CLASS_PRIORITY=on)";
    case ClassPrioritySetting::kOff: return "gate only (TRIRACE_NET_CLASS_PRIORITY=off)";
    case ClassPrioritySetting::kAuto: break;
  }
  if (policy != PolicyKind::kTrirace) {
    return absl::StrCat("gate only (the ", kPolicyKindTexts[static_cast<int>(policy)],
                        " policy sets no class marks)");
  }
  return on ? absl::StrCat("network (the hosts' queues honour the marks: ", marks.why, ")")
            : absl::StrCat("gate only (no queue honours the marks: ", marks.why, ")");
}

std::string VerdictLine(const StartVerdict& v, int nranks) {
  const std::string ranks = nranks > 0 ? absl::StrCat(", ", nranks, nranks == 1 ? " rank" : " ranks") : "";
  std::string line;
  if (v.mode == ShimMode::kSchedule) {
    line = absl::StrCat("TriRace: schedule mode, ", kPolicyKindTexts[static_cast<int>(v.policy)], " policy", ranks, ", ",
                        v.occupancy.empty() ? "no occupancy input" : v.occupancy);
    if (!v.class_order.empty()) absl::StrAppend(&line, ", class order: ", v.class_order);
  } else if (v.mode == ShimMode::kObserve && v.requested == ShimMode::kSchedule) {
    line = absl::StrCat("TriRace: OBSERVE ONLY", ranks, ", because ", v.why);
    if (!v.fix.empty()) absl::StrAppend(&line, "; fix: ", v.fix);
  } else if (v.mode == ShimMode::kObserve) {
    line = absl::StrCat("TriRace: observe mode (TRIRACE_MODE=observe)", ranks, ": ops are traced, none is held");
  } else {
    line = absl::StrCat("TriRace: OFF", ranks, v.why.empty() ? " (TRIRACE_MODE=off)" : absl::StrCat(", because ", v.why),
                        ": every call is forwarded");
  }
  if (!v.notes.empty()) absl::StrAppend(&line, "; ", v.notes);
  return line;
}

std::optional<int> LauncherRank() { return FirstNumber({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}); }

std::optional<int> LauncherWorldSize() {
  return FirstNumber({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
}

}  // namespace trirace::interpose
