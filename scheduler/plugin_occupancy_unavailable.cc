// OpenPluginOccupancyReader() for builds without the trirace_occupancy library.
#include "absl/status/status.h"
#include "scheduler/plugin_occupancy.h"

namespace trirace::sched {

absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenPluginOccupancyReader(const std::string& /*job*/,
                                                                          const Clock* /*clock*/) {
  return absl::FailedPreconditionError(
      "the net plugin occupancy reader is not in this build (trirace_occupancy was not built)");
}

}  // namespace trirace::sched
