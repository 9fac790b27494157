#include "interpose/engine_factory.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/params.h"
#include "interpose/plugin_occupancy.h"
#include "scheduler/adversarial_policy.h"
#include "scheduler/fifo_policy.h"
#include "scheduler/priority_policy.h"
#include "scheduler/sysfs_occupancy.h"
#include "scheduler/trirace_policy.h"

namespace trirace::interpose {

absl::StatusOr<std::unique_ptr<sched::Policy>> MakePolicy(std::string_view name) {
  if (name == "fifo") return std::make_unique<sched::FifoPolicy>();
  if (name == "priority") return std::make_unique<sched::PriorityPolicy>(sched::PriorityPolicyConfig::FromParams());
  if (name == "trirace") return std::make_unique<sched::TriracePolicy>(sched::TriracePolicyConfig::FromParams());
  if (name == "adversarial") {
    return std::make_unique<sched::AdversarialPolicy>(sched::AdversarialPolicyConfig::FromParams());
  }
  return absl::InvalidArgumentError(absl::StrCat("scheduling policy '",
                                                 absl::string_view(name.data(), name.size()),
                                                 "' is not one of fifo, priority, trirace, adversarial"));
}

absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> MakeOccupancyReader(
    std::string_view source, const std::vector<std::string>& interfaces, const std::string& sysfs_root) {
  if (source == "none") return std::unique_ptr<sched::OccupancyReader>();
  if (source == "plugin" || source == "auto") {
    absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> plugin = OpenPluginOccupancyReader();
    if (plugin.ok() || source == "plugin") return plugin;
  }
  if (source == "sysfs" || source == "auto") return sched::OpenSysfsOccupancyReader(interfaces, sysfs_root);
  return absl::InvalidArgumentError(absl::StrCat("TRIRACE_OCCUPANCY='",
                                                 absl::string_view(source.data(), source.size()),
                                                 "' is not one of auto, plugin, sysfs, none"));
}

absl::StatusOr<std::unique_ptr<sched::Engine>> MakeEngineFromParams(sched::GateOpener* opener,
                                                                    const sched::NicLinkModel& model,
                                                                    sched::EngineOptions options) {
  absl::StatusOr<std::unique_ptr<sched::Policy>> policy = MakePolicy(ParamEnum(ParamId::kPolicy));
  if (!policy.ok()) return policy.status();
  auto engine = std::make_unique<sched::Engine>(std::move(*policy), opener, options);
  for (const sched::LinkSpec& link : model.links()) engine->AddLink(link);

  const std::string& source = ParamEnum(ParamId::kOccupancySource);
  const std::string& nic = model.options().local_interface;
  absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> reader = MakeOccupancyReader(source, {nic});
  if (!reader.ok()) {
    if (source == "auto") {
      TRIRACE_INFO(SCHED, "no link occupancy input: %s", reader.status().ToString());
    } else {
      TRIRACE_WARN(SCHED, "TRIRACE_OCCUPANCY=%s: %s; running without occupancy input", source,
                   reader.status().ToString());
    }
  } else if (*reader != nullptr) {
    TRIRACE_INFO(SCHED, "link occupancy from %s for interface %s", std::string((*reader)->name()), nic);
    engine->SetOccupancyReader(std::move(*reader), {{nic, sched::NicLinkModel::kLocalNic}});
  }
  return engine;
}

}  // namespace trirace::interpose
