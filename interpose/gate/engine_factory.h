// Where the TRIRACE_* parameters become the shim's scheduler objects: the
// occupancy reader (TRIRACE_OCCUPANCY) and a ready engine with the policy
// of TRIRACE_POLICY (sched::MakePolicy, scheduler/policy_factory.h, which
// the simulator calls too) and the links of the topology (op_links.h).
// scheduler/ knows nothing of the plugin's reader library; this file is the
// one place that picks a reader.
//
//   std::unique_ptr<OpLinks> links = OpLinks::FromParams();
//   absl::StatusOr<std::unique_ptr<sched::Engine>> engine = MakeEngineFromParams(&gates, *links);
//
// An occupancy source that cannot be opened is not an error: the engine
// runs without occupancy input and one INFO line says why (TRIRACE_OCCUPANCY
// =plugin|sysfs make it a WARN).
//
// Thread safety: call once per engine; the result is thread-safe (engine.h).
#ifndef TRIRACE_INTERPOSE_GATE_ENGINE_FACTORY_H_
#define TRIRACE_INTERPOSE_GATE_ENGINE_FACTORY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/params.h"
#include "interpose/network/op_links.h"
#include "scheduler/engine.h"
#include "scheduler/occupancy_reader.h"
#include "scheduler/policy.h"
#include "topology/monitors/ib_counters.h"

namespace trirace::interpose {

// The reader `source` (TRIRACE_OCCUPANCY) asks for, for the NIC `nic`
// (a netdev or an RDMA device name): kPlugin (the net plugin's segment; an
// error if it cannot be opened), kInfiniband (the port counters of `nic`,
// or of the RDMA device of netdev `nic`; topology/monitors/ib_counters.h),
// kSysfs (the netdev's statistics; net_stats.h), kAuto (plugin when its
// segment opens, else the port counters when `nic` has an RDMA device, else
// the netdev's statistics), kNone (nullptr). Where the segment does not
// exist yet (the plugin publishes once NCCL loads it), kPlugin and kAuto
// give a reader that switches to it when it appears, reading the kAuto
// fallback (or nothing, kPlugin) until then. The reader names its device
// `nic` in either case. `sys_root` is /sys.
absl::StatusOr<std::unique_ptr<OccupancyReader>> MakeOccupancyReader(OccupancySource source, const std::string& nic,
                                                                     const std::string& sys_root = "/sys");

// The RDMA port behind `nic` (an RDMA device's port 1, or the RDMA device of
// netdev `nic`), named `nic`; nullopt when it has none.
std::optional<topo::IbPort> RdmaPortOf(const std::string& nic, const std::string& sys_root = "/sys");

// An engine with the policy of TRIRACE_POLICY, `options`, the links of
// `links` (registered; links added later are registered by
// OpLinks::Publish) and the occupancy reader of TRIRACE_OCCUPANCY on this
// host's NIC, measuring both of its links; unless the source is kNone, the
// NVLink counters of this host's GPUs (NVML) are read beside it for the
// GPUs the model gives NVLinks (CombineReaders), each measuring its GPU's
// nvl-tx and nvl-rx links.
// `*occupancy_input`, when given, receives the input in words for the
// start-up verdict: "plugin occupancy", "sysfs occupancy (the plugin's once
// its segment appears)", "no occupancy input".
absl::StatusOr<std::unique_ptr<sched::Engine>> MakeEngineFromParams(
    sched::GateOpener* opener, OpLinks& links,
    sched::EngineOptions options = sched::EngineOptions::FromParams(), std::string* occupancy_input = nullptr);

// The words for a reader named `name` (OccupancyReader::name()), or for none.
std::string OccupancyInputText(const OccupancyReader* reader, OccupancySource source);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_ENGINE_FACTORY_H_
