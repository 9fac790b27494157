#include "interpose/gate/engine_factory.h"

#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/params.h"
#include "interpose/network/plugin_occupancy.h"
#include "scheduler/policy_factory.h"
#include "topology/monitors/ib_counters.h"
#include "topology/monitors/net_stats.h"
#include "topology/monitors/nvlink_counters.h"

namespace trirace::interpose {

std::optional<topo::IbPort> RdmaPortOf(const std::string& nic, const std::string& sys_root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (nic.empty() || nic.find('/') != std::string::npos) return std::nullopt;
  if (fs::is_directory(sys_root + "/class/infiniband/" + nic + "/ports/1", ec)) return topo::IbPort{nic, 1, nic};
  // A RoCE or IPoIB netdev: its PCI device has an RDMA device.
  for (const fs::directory_entry& e : fs::directory_iterator(sys_root + "/class/net/" + nic + "/device/infiniband", ec)) {
    return topo::IbPort{e.path().filename().string(), 1, nic};
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<OccupancyReader>> MakeOccupancyReader(OccupancySource source, const std::string& nic,
                                                                     const std::string& sys_root) {
  const std::string net = sys_root + "/class/net";
  const std::string ib = sys_root + "/class/infiniband";
  switch (source) {
    case OccupancySource::kNone: return std::unique_ptr<OccupancyReader>();
    case OccupancySource::kPlugin: {
      absl::StatusOr<std::unique_ptr<OccupancyReader>> plugin = OpenPluginOccupancyReader();
      if (SegmentMayOpenLater(plugin.status())) return PluginOccupancyReaderOnceItOpens(nullptr);
      return plugin;
    }
    case OccupancySource::kSysfs: return topo::OpenNetStatsReader({nic}, net);
    case OccupancySource::kInfiniband: {
      std::optional<topo::IbPort> port = RdmaPortOf(nic, sys_root);
      if (!port) {
        return absl::NotFoundError(absl::StrCat("TRIRACE_NIC ", nic, " is not an RDMA device and has none under ",
                                                net, "/", nic, "/device/infiniband"));
      }
      return topo::OpenIbCountersReader({*port}, ib);
    }
    case OccupancySource::kAuto: break;
  }
  absl::StatusOr<std::unique_ptr<OccupancyReader>> plugin = OpenPluginOccupancyReader();
  if (plugin.ok()) return plugin;
  absl::StatusOr<std::unique_ptr<OccupancyReader>> counters = absl::NotFoundError("no RDMA device");
  if (std::optional<topo::IbPort> port = RdmaPortOf(nic, sys_root)) counters = topo::OpenIbCountersReader({*port}, ib);
  if (!counters.ok()) counters = topo::OpenNetStatsReader({nic}, net);
  // The segment usually appears later, when NCCL loads the plugin.
  if (!SegmentMayOpenLater(plugin.status())) return counters;
  return PluginOccupancyReaderOnceItOpens(counters.ok() ? *std::move(counters) : nullptr);
}

std::string OccupancyInputText(const OccupancyReader* reader, OccupancySource source) {
  if (reader == nullptr) return "no occupancy input";
  const std::string name(reader->name());
  if (name == "plugin") return "plugin occupancy";
  // A reader waiting for the plugin's segment names its fallback meanwhile.
  const bool waits = source == OccupancySource::kAuto || source == OccupancySource::kPlugin;
  if (absl::StartsWith(name, "plugin")) return "plugin occupancy (once its segment appears)";
  return absl::StrCat(name, " occupancy", waits ? " (the plugin's once its segment appears)" : "");
}

absl::StatusOr<std::unique_ptr<sched::Engine>> MakeEngineFromParams(sched::GateOpener* opener, OpLinks& links,
                                                                    sched::EngineOptions options,
                                                                    std::string* occupancy_input) {
  const PolicyKind policy = ParamChoice<PolicyKind>();
  auto engine = std::make_unique<sched::Engine>(sched::MakePolicy(policy), opener,
                                                sched::EngineOptionsFor(policy, options));
  links.Register(*engine);

  const OccupancySource source = ParamChoice<OccupancySource>();
  const std::string& nic = links.nic().interface;
  absl::StatusOr<std::unique_ptr<OccupancyReader>> reader = MakeOccupancyReader(source, nic);
  if (!reader.ok()) {
    if (source == OccupancySource::kAuto) {
      TRIRACE_INFO(SCHED, "no link occupancy input: %s", reader.status().ToString());
    } else {
      TRIRACE_WARN(SCHED, "TRIRACE_OCCUPANCY=%s: %s; running without occupancy input",
                   ParamEnum(ParamId::kOccupancySource), reader.status().ToString());
    }
  }
  if (occupancy_input != nullptr) {
    *occupancy_input = OccupancyInputText(reader.ok() ? reader->get() : nullptr, source);
  }
  std::vector<std::pair<std::string, sched::LinkId>> devices;
  std::vector<std::unique_ptr<OccupancyReader>> parts;
  if (reader.ok() && *reader != nullptr) {
    TRIRACE_INFO(SCHED, "link occupancy from %s for interface %s", std::string((*reader)->name()), nic);
    devices = links.OccupancyDevices();
    parts.push_back(*std::move(reader));
  }
  // The NVLinks of this host's GPUs, where the model has them (a topology
  // file) and NVML can count them.
  if (source != OccupancySource::kNone) {
    if (const std::vector<std::string> gpus = links.NvlinkGpus(); !gpus.empty()) {
      absl::StatusOr<std::unique_ptr<OccupancyReader>> nvlink = topo::OpenNvlinkCountersReader(gpus);
      if (nvlink.ok()) {
        TRIRACE_INFO(SCHED, "NVLink occupancy from NVML for %d GPU(s)", static_cast<int>(gpus.size()));
        for (auto& d : links.NvlinkOccupancyDevices()) devices.push_back(std::move(d));
        parts.push_back(*std::move(nvlink));
      } else {
        TRIRACE_INFO(SCHED, "no NVLink occupancy: %s", nvlink.status().ToString());
      }
    }
  }
  if (std::unique_ptr<OccupancyReader> combined = CombineReaders(std::move(parts)); combined != nullptr) {
    engine->SetOccupancyReader(std::move(combined), std::move(devices));
  }
  return engine;
}

}  // namespace trirace::interpose
