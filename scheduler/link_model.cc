#include "scheduler/link_model.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/logging.h"
#include "common/net_interfaces.h"
#include "common/params.h"
#include "common/process_info.h"

namespace trirace::sched {

std::string DefaultRouteInterface(const std::string& proc_net_route) {
  std::ifstream in(proc_net_route);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, dest;
    if (fields >> iface >> dest && dest == "00000000") return iface;
  }
  return "";
}

NicLinkModel::Options NicLinkModel::Options::FromParams(const std::string& sysfs_net) {
  Options o;
  o.local_host = ParamString(ParamId::kHostId);
  if (o.local_host.empty()) o.local_host = HostName();
  o.local_interface = ParamString(ParamId::kNic);
  if (o.local_interface.empty()) o.local_interface = DefaultRouteInterface();
  if (o.local_interface.empty()) o.local_interface = "lo";
  const double gbps = ParamDouble(ParamId::kNicGbps);
  if (gbps > 0) {
    o.nic_bytes_per_s = gbps * 1e9 / 8;
  } else {
    if (std::optional<int64_t> mbps = SysfsLinkSpeedMbps(o.local_interface, sysfs_net)) {
      o.nic_bytes_per_s = static_cast<double>(*mbps) * 1e6 / 8;
    } else {
      TRIRACE_INFO(SCHED, "link model: no speed for interface %s; assuming 100 Gbit/s (set TRIRACE_NIC_GBPS)",
                   o.local_interface);
    }
  }
  return o;
}

NicLinkModel::NicLinkModel(Options options) : options_(std::move(options)) {
  absl::MutexLock lock(&mu_);
  LinkOfHost(options_.local_host);
  links_[kLocalNic].interface = options_.local_interface;
}

LinkId NicLinkModel::LinkOfHost(const std::string& host) {
  auto [it, inserted] = by_host_.try_emplace(host, static_cast<LinkId>(links_.size()));
  if (inserted) links_.push_back({"nic:" + host, options_.nic_bytes_per_s, ""});
  return it->second;
}

std::vector<LinkSpec> NicLinkModel::links() const {
  absl::MutexLock lock(&mu_);
  return links_;
}

std::vector<LinkId> NicLinkModel::LinksFor(const OpEndpoints& op) {
  std::vector<LinkId> out;
  if (op.peer_hosts.empty()) {
    out.push_back(kLocalNic);
    return out;
  }
  absl::MutexLock lock(&mu_);
  for (const std::string& host : op.peer_hosts) {
    if (host == options_.local_host) continue;
    const LinkId id = LinkOfHost(host);
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  }
  if (!out.empty()) out.insert(out.begin(), kLocalNic);  // leaving the host
  return out;
}

}  // namespace trirace::sched
