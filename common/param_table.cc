// The registry of TRIRACE_* parameters: one row per parameter, in ParamId
// order (see params.h for how to add one).
#include <array>
#include "absl/strings/string_view.h"

#include "common/params.h"
#include "common/param_table.h"

namespace trirace {
namespace {

constexpr absl::string_view kDebugLevels[] = {"NONE", "WARN", "INFO", "TRACE"};
constexpr absl::string_view kModes[] = {"off", "observe", "schedule"};
constexpr absl::string_view kPolicies[] = {"fifo", "priority", "trirace"};

const ParamSpec kTable[] = {
    {.id = ParamId::kDebug,
     .name = "TRIRACE_DEBUG",
     .type = ParamType::kEnum,
     .default_text = "WARN",
     .description = "log level: NONE, WARN, INFO or TRACE (each includes the ones before it)",
     .component = "common",
     .choices = kDebugLevels},
    {.id = ParamId::kDebugSubsys,
     .name = "TRIRACE_DEBUG_SUBSYS",
     .type = ParamType::kString,
     .default_text = "ALL",
     .description = "comma list of subsystems to log (INIT,NET,SCHED,TOPO,INTERPOSE,TRACE,ALL); "
                    "a leading ^ logs all but those",
     .component = "common"},
    {.id = ParamId::kDebugFile,
     .name = "TRIRACE_DEBUG_FILE",
     .type = ParamType::kString,
     .default_text = "",
     .description = "write logs to this file instead of stderr; %h = host, %p = pid",
     .component = "common"},
    {.id = ParamId::kMode,
     .name = "TRIRACE_MODE",
     .type = ParamType::kEnum,
     .default_text = "observe",
     .description = "shim mode: off (pure forwarding), observe (record and tag), schedule (gated launch)",
     .component = "interpose",
     .choices = kModes},
    {.id = ParamId::kPolicy,
     .name = "TRIRACE_POLICY",
     .type = ParamType::kEnum,
     .default_text = "trirace",
     .description = "scheduling policy in schedule mode: fifo, priority (class-blind baseline), trirace",
     .component = "scheduler",
     .choices = kPolicies},
    // plugin/: the net plugin (TCP transport, wrapper, occupancy)
    // hostccl/: the CPU NCCL
    // interpose/: the shim (library lookup, trace)
    // scheduler/: the engine and policies
};

static_assert(std::size(kTable) == static_cast<size_t>(ParamId::kCount),
              "every ParamId needs exactly one row in kTable");

}  // namespace

std::span<const ParamSpec> ParamTable() { return kTable; }

}  // namespace trirace
