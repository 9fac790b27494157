// NetCore's set-up (the transport of this build, transport_choice.h), the
// device-property cache and the occupancy publisher.
#include "plugin/core/net_core.h"

#include <string>
#include <utility>
#include <vector>

#include "common/abseil_runtime.h"
#include "common/logging.h"
#include "common/params.h"
#include "plugin/core/core_objects.h"
#include "plugin/core/nccl_log_sink.h"
#include "plugin/core/transport_choice.h"
#include "plugin/occupancy/segment.h"

namespace trirace::net {

absl::Status NetCore::Init(const InitArgs& args) {
  absl::MutexLock lock(&mu_);
  if (args.logger != nullptr) InstallNcclLogSink(args.logger);
  if (initialized_) return init_status_;
  initialized_ = true;
  ConfigureAbseilRuntime();  // every request locks (common/abseil_runtime.h); after the sink: it reads params
  TransportChoice choice = ChooseTransport();
  transport_ = std::move(choice.transport);
  init_status_ = transport_->Init(args);
  if (!init_status_.ok()) return init_status_;
  RefreshDeviceProps();
  class_priority_ = NetClassPriorityEnabled();
  if (class_priority_) {
    TRIRACE_INFO(NET, "class priority on: sends are marked DSCP EF / SO_PRIORITY 6 (P2P), "
                      "0 / 0 (SPARSE), CS1 / 1 (DENSE)");
  }
  auto ctx = std::make_unique<Context>();
  default_context_ = ctx.get();
  contexts_.push_back(std::move(ctx));
  std::vector<occupancy::OccupancyPublisher::NicInfo> nics;
  for (const auto& p : props_) nics.push_back({p->name, static_cast<uint32_t>(p->speed_mbps)});
  std::string segment;
  if (choice.publish_occupancy) segment = occupancy::SegmentName("");
  absl::Status pub = publisher_.Start(nics, segment, ParamInt(ParamId::kNetPublishUs));
  if (!pub.ok()) {
    TRIRACE_WARN(NET, "occupancy not published: %s", pub.ToString());
  } else if (!segment.empty()) {
    TRIRACE_INFO(NET, "publishing occupancy of %d device(s) in %s", static_cast<int>(nics.size()),
                 segment);
  }
  ready_.store(true, std::memory_order_release);
  return init_status_;
}

void NetCore::RefreshDeviceProps() {
  int n = transport_->NumDevices();
  for (int dev = static_cast<int>(props_.size()); dev < n; ++dev) {
    auto p = transport_->Properties(dev);
    props_.push_back(std::make_unique<DeviceProps>(p.ok() ? *p : DeviceProps{}));
  }
  num_devices_.store(static_cast<int>(props_.size()), std::memory_order_release);
}

absl::Status NetCore::RequireInit() {
  if (ready_.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (!initialized_) return absl::FailedPreconditionError("the net plugin is not initialised (init not called)");
  return init_status_.ok() ? absl::OkStatus() : init_status_;
}

absl::Status NetCore::CheckDev(int dev, const char* call) {
  int n = num_devices_.load(std::memory_order_acquire);
  if (dev < 0 || dev >= n) {
    return InvalidCall(call, absl::StrCat("dev=", dev, " is not a device index (accepted: 0..", n - 1, ")"));
  }
  return absl::OkStatus();
}

absl::Status NetCore::Devices(int* ndev) {
  if (ndev == nullptr) return InvalidCall("devices", "ndev is NULL");
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  *ndev = num_devices_.load(std::memory_order_acquire);
  return absl::OkStatus();
}

absl::StatusOr<const DeviceProps*> NetCore::Properties(int dev) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  TRIRACE_RETURN_IF_ERROR(CheckDev(dev, "getProperties"));
  absl::MutexLock lock(&mu_);
  return props_[dev].get();
}

absl::Status NetCore::MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t* props) {
  if (dev == nullptr || props == nullptr) return InvalidCall("makeVDevice", "d or props is NULL");
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  absl::MutexLock lock(&mu_);
  TRIRACE_RETURN_IF_ERROR(transport_->MakeVDevice(dev, *props));
  RefreshDeviceProps();
  // The virtual NIC is published under its own index; readers merge by name.
  if (*dev >= 0 && *dev < static_cast<int>(props_.size())) {
    publisher_.AddNic({props_[*dev]->name, static_cast<uint32_t>(props_[*dev]->speed_mbps)});
  }
  return absl::OkStatus();
}

}  // namespace trirace::net
