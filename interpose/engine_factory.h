// Where the TRIRACE_* parameters become scheduler objects: the policy
// (TRIRACE_POLICY), the occupancy reader (TRIRACE_OCCUPANCY) and a ready
// engine with the links of the topology (op_links.h). scheduler/ holds the
// implementations and knows nothing of params-to-object choices or of the
// plugin's reader library; this file is the one place that picks them.
//
//   std::unique_ptr<OpLinks> links = OpLinks::FromParams();
//   absl::StatusOr<std::unique_ptr<sched::Engine>> engine = MakeEngineFromParams(&gates, *links);
//
// An occupancy source that cannot be opened is not an error: the engine
// runs without occupancy input and one INFO line says why (TRIRACE_OCCUPANCY
// =plugin|sysfs make it a WARN).
//
// Thread safety: call once per engine; the result is thread-safe (engine.h).
#ifndef TRIRACE_INTERPOSE_ENGINE_FACTORY_H_
#define TRIRACE_INTERPOSE_ENGINE_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/params.h"
#include "scheduler/engine.h"
#include "interpose/op_links.h"
#include "scheduler/occupancy_reader.h"
#include "scheduler/policy.h"

namespace trirace::interpose {

// The policy of `kind` (TRIRACE_POLICY), configured from the params registry.
std::unique_ptr<sched::Policy> MakePolicy(PolicyKind kind);

// The reader `source` (TRIRACE_OCCUPANCY) asks for: kPlugin (the net
// plugin's segment; an error if it cannot be opened), kSysfs (the counters
// of `interfaces`), kAuto (plugin when its segment opens, else sysfs), kNone
// (nullptr). `sysfs_root` is /sys/class/net.
absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> MakeOccupancyReader(
    OccupancySource source, const std::vector<std::string>& interfaces,
    const std::string& sysfs_root = "/sys/class/net");

// An engine with the policy of TRIRACE_POLICY, `options`, the links of
// `links` (registered; links added later are registered by
// OpLinks::Publish) and the occupancy reader of TRIRACE_OCCUPANCY on this
// host's NIC, measuring both of its links.
absl::StatusOr<std::unique_ptr<sched::Engine>> MakeEngineFromParams(
    sched::GateOpener* opener, OpLinks& links,
    sched::EngineOptions options = sched::EngineOptions::FromParams());

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_ENGINE_FACTORY_H_
