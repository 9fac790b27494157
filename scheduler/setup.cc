#include "scheduler/setup.h"

#include "common/logging.h"
#include "common/params.h"

namespace trirace::sched {

absl::StatusOr<std::unique_ptr<Engine>> MakeEngineFromParams(GateOpener* opener, const NicLinkModel& model,
                                                             EngineOptions options) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(ParamEnum(ParamId::kPolicy));
  if (!policy.ok()) return policy.status();
  auto engine = std::make_unique<Engine>(std::move(*policy), opener, options);
  for (const LinkSpec& link : model.links()) engine->AddLink(link);

  const std::string& source = ParamEnum(ParamId::kOccupancySource);
  const std::string& nic = model.options().local_interface;
  absl::StatusOr<std::unique_ptr<OccupancyReader>> reader = MakeOccupancyReader(source, {nic});
  if (!reader.ok()) {
    if (source == "auto") {
      TRIRACE_INFO(SCHED, "no link occupancy input: %s", reader.status().ToString());
    } else {
      TRIRACE_WARN(SCHED, "TRIRACE_OCCUPANCY=%s: %s; running without occupancy input", source,
                   reader.status().ToString());
    }
  } else if (*reader != nullptr) {
    TRIRACE_INFO(SCHED, "link occupancy from %s for interface %s", std::string((*reader)->name()), nic);
    engine->SetOccupancyReader(std::move(*reader), {{nic, NicLinkModel::kLocalNic}});
  }
  return engine;
}

}  // namespace trirace::sched
