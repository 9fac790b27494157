#include "interpose/engine_factory.h"

#include "common/logging.h"
#include "common/params.h"
#include "interpose/plugin_occupancy.h"
#include "scheduler/adversarial_policy.h"
#include "scheduler/fifo_policy.h"
#include "scheduler/priority_policy.h"
#include "scheduler/sysfs_occupancy.h"
#include "scheduler/trirace_policy.h"

namespace trirace::interpose {

std::unique_ptr<sched::Policy> MakePolicy(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kFifo: return std::make_unique<sched::FifoPolicy>();
    case PolicyKind::kPriority:
      return std::make_unique<sched::PriorityPolicy>(sched::PriorityPolicyConfig::FromParams());
    case PolicyKind::kTrirace:
      return std::make_unique<sched::TriracePolicy>(sched::TriracePolicyConfig::FromParams());
    case PolicyKind::kAdversarial:
      return std::make_unique<sched::AdversarialPolicy>(sched::AdversarialPolicyConfig::FromParams());
  }
  return std::make_unique<sched::TriracePolicy>(sched::TriracePolicyConfig::FromParams());
}

absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> MakeOccupancyReader(
    OccupancySource source, const std::vector<std::string>& interfaces, const std::string& sysfs_root) {
  switch (source) {
    case OccupancySource::kNone: return std::unique_ptr<sched::OccupancyReader>();
    case OccupancySource::kPlugin: return OpenPluginOccupancyReader();
    case OccupancySource::kSysfs: return sched::OpenSysfsOccupancyReader(interfaces, sysfs_root);
    case OccupancySource::kAuto: break;
  }
  absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> plugin = OpenPluginOccupancyReader();
  if (plugin.ok()) return plugin;
  return sched::OpenSysfsOccupancyReader(interfaces, sysfs_root);
}

absl::StatusOr<std::unique_ptr<sched::Engine>> MakeEngineFromParams(sched::GateOpener* opener, OpLinks& links,
                                                                    sched::EngineOptions options) {
  auto engine = std::make_unique<sched::Engine>(MakePolicy(ParamChoice<PolicyKind>()), opener, options);
  links.Register(*engine);

  const OccupancySource source = ParamChoice<OccupancySource>();
  const std::string& nic = links.nic().interface;
  absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> reader = MakeOccupancyReader(source, {nic});
  if (!reader.ok()) {
    if (source == OccupancySource::kAuto) {
      TRIRACE_INFO(SCHED, "no link occupancy input: %s", reader.status().ToString());
    } else {
      TRIRACE_WARN(SCHED, "TRIRACE_OCCUPANCY=%s: %s; running without occupancy input",
                   ParamEnum(ParamId::kOccupancySource), reader.status().ToString());
    }
  } else if (*reader != nullptr) {
    TRIRACE_INFO(SCHED, "link occupancy from %s for interface %s", std::string((*reader)->name()), nic);
    engine->SetOccupancyReader(std::move(*reader), links.OccupancyDevices());
  }
  return engine;
}

}  // namespace trirace::interpose
