#include "doctor.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/params.h"
#include "interpose/comm/comm_state.h"
#include "interpose/comm/comm_traffic_class.h"
#include "interpose/device/device.h"
#include "interpose/gate/engine_factory.h"
#include "interpose/real_nccl.h"
#include "library_paths.h"
#include "net_choice.h"
#include "topology/discovery/local.h"
#include "topology/local_nic.h"
#include "trirace/trirace.h"

namespace trirace::tools {
namespace {

void ExamineShim(DoctorReport& r) {
  r.shim_path = FindLibrary(kShimLibrary);
  if (const char* preload = std::getenv("LD_PRELOAD"); preload != nullptr) {
    for (absl::string_view entry : absl::StrSplit(preload, absl::ByAnyChar(": "), absl::SkipEmpty())) {
      const size_t slash = entry.rfind('/');
      if (entry.substr(slash == absl::string_view::npos ? 0 : slash + 1) == kShimLibrary) r.shim_preloaded = true;
    }
  }
  if (r.shim_path.empty()) {
    r.shim_error = absl::StrCat(kShimLibrary, " is not next to this command nor in its library folders");
    return;
  }
  // Loading it resolves its NEEDED libraries: the check that the dynamic
  // loader will not skip the preload with a mere warning.
  dlerror();
  void* handle = dlopen(r.shim_path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    r.shim_error = e != nullptr ? e : "dlopen failed";
    return;
  }
  r.shim_loads = true;
  // Left loaded: its static objects may be referenced by exit handlers.
}

std::string Gbps(double gbps) { return gbps > 0 ? absl::StrFormat("%g Gbit/s", gbps) : "rate unknown"; }

void ExamineTopology(DoctorReport& r) {
  topo::LocalDiscoveryOptions options;
  options.sysfs_root = ParamString(ParamId::kSysfsRoot);
  topo::LocalDiscovery local = topo::DiscoverLocalHost(options);
  const topo::Host& h = local.host;
  for (const topo::Nic& n : h.nics) {
    r.nics.push_back(absl::StrCat(n.name, " ", Gbps(n.gbps), n.rail >= 0 ? absl::StrCat(", rail ", n.rail) : "",
                                  n.numa >= 0 ? absl::StrCat(", NUMA ", n.numa) : ""));
  }
  for (size_t i = 0; i < h.gpus.size(); ++i) {
    const topo::Gpu& g = h.gpus[i];
    const std::string nic = g.nic >= 0 && g.nic < static_cast<int>(h.nics.size())
                                ? absl::StrCat(h.nics[g.nic].name, " (rail ", h.nics[g.nic].rail, ")")
                                : "no NIC";
    r.gpus.push_back(absl::StrCat("gpu", g.dev >= 0 ? g.dev : static_cast<int>(i), " ", g.pci, " -> ", nic));
  }
  r.topology_notes = std::move(local.notes);
  r.nic = topo::LocalNicFromParams(ParamString(ParamId::kSysfsRoot) + "/class/net").interface;
}

void ExamineNet(DoctorReport& r) {
  const absl::StatusOr<NetDecision> d = DecideNet(GatherNetInputs(
      NetChoice::kAuto, ReadNetEnv(), FindLibrary(kNetPluginLibrary), ParamString(ParamId::kSysfsRoot)));
  r.net_ok = d.ok();
  r.net = d.ok() ? NetLine(*d) : std::string(d.status().message());
  if (d.ok() && d->choice != NetChoice::kTcp) {
    r.class_order_note = absl::StrCat(
        d->choice == NetChoice::kNative ? "NCCL's own RDMA transport" : "the wrapped plugin",
        " carries the bytes: the hosts' qdiscs say nothing of the fabric's QoS (an IB service level or a RoCE "
        "DSCP gets its own queue only where the fabric's administrator set one up); "
        "TRIRACE_NET_CLASS_PRIORITY=on where they vouch for it, off to order by the gate alone");
  }
}

void ExamineOccupancy(DoctorReport& r) {
  const OccupancySource source = ParamChoice<OccupancySource>();
  absl::StatusOr<std::unique_ptr<OccupancyReader>> reader =
      interpose::MakeOccupancyReader(source, r.nic, ParamString(ParamId::kSysfsRoot));
  if (!reader.ok()) {
    r.occupancy = std::string(reader.status().message());
    return;
  }
  r.occupancy = interpose::OccupancyInputText(reader->get(), source);
  if (*reader == nullptr) return;  // TRIRACE_OCCUPANCY=none
  const absl::StatusOr<OccupancySnapshot> snap = (*reader)->Read();
  r.occupancy_readable = snap.ok();
  if (!snap.ok()) absl::StrAppend(&r.occupancy, ": not readable: ", snap.status().message());
}

}  // namespace

DoctorReport Examine(const MarksFinding* other_host) {
  DoctorReport r;
  ExamineShim(r);

  absl::Status device = absl::FailedPreconditionError("no real NCCL");
  interpose::NcclPlan nccl;
  absl::StatusOr<std::unique_ptr<interpose::RealNccl>> real =
      interpose::ResolveRealNccl(ParamString(ParamId::kNcclLibrary));
  if (real.ok()) {
    r.nccl_found = true;
    r.nccl_path = (*real)->path;
    // The shim's words for its own dlopen; here it is the loader's search.
    r.nccl_how = (*real)->how == interpose::kHowLoadedByShim ? "the loader's search for libnccl.so.2" : (*real)->how;
    if ((*real)->GetVersion(&r.nccl_version) != ncclSuccess) r.nccl_version = 0;
    nccl = interpose::PlanForNccl(r.nccl_version);
    absl::StatusOr<std::unique_ptr<device::Device>> dev = device::SelectDevice((*real)->handle);
    device = dev.status();
    r.device_ok = dev.ok();
    r.device = dev.ok() ? std::string((*dev)->name()) : std::string(dev.status().message());
  } else {
    r.nccl_error = std::string(real.status().message());
    r.device = "not examined: no real NCCL";
  }

  ExamineTopology(r);
  ExamineNet(r);
  ExamineOccupancy(r);

  r.verdict = interpose::DecideStart(ParamChoice<ShimMode>(), ParamChoice<PolicyKind>(), nccl, device,
                                     interpose::GatedLaunchPrecondition());
  if (!r.nccl_found && r.verdict.requested != ShimMode::kOff) {
    r.verdict.mode = ShimMode::kOff;
    r.verdict.why = absl::StrCat("no real NCCL: ", r.nccl_error);
    r.verdict.fix = "set TRIRACE_NCCL_LIBRARY to the job's libnccl.so.2, or put its folder on LD_LIBRARY_PATH";
  }
  if (r.verdict.mode == ShimMode::kSchedule) r.verdict.occupancy = r.occupancy;
  r.nranks = interpose::LauncherWorldSize().value_or(0);

  const interpose::RoleTrafficClasses& classes = interpose::ConfiguredRoleTrafficClasses();
  for (int role = TRIRACE_ROLE_DATA_PARALLEL; role <= TRIRACE_ROLE_EXPERT; ++role) {
    const int c = classes[role];
    r.role_classes.emplace_back(std::string(interpose::RoleName(role)),
                                c == interpose::kNoTrafficClass ? "NCCL's default" : absl::StrCat(c));
  }
  r.classes_applied = r.verdict.requested == ShimMode::kSchedule && nccl.schedulable && nccl.config_layout_known;
  const MarksFinding& marks = other_host != nullptr ? *other_host : HostMarksFinding();
  r.wire_class_priority = NetClassPriorityEnabledFor(marks);
  r.class_order = interpose::ClassOrderText(ParamChoice<PolicyKind>(), marks);
  if (r.verdict.mode == ShimMode::kSchedule) r.verdict.class_order = r.class_order;
  return r;
}

bool RequestedModeRuns(const DoctorReport& r) {
  return r.verdict.mode == r.verdict.requested && (r.verdict.requested == ShimMode::kOff || r.shim_loads);
}

}  // namespace trirace::tools
