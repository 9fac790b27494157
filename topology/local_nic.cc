#include "topology/local_nic.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "common/logging.h"
#include "common/net_interfaces.h"
#include "common/params.h"
#include "common/process_info.h"

namespace trirace::topo {

std::string LocalHostKey() {
  std::string key = ParamString(ParamId::kHostId);
  return key.empty() ? HostName() : key;
}

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

LocalNic LocalNicFromParams(const std::string& sysfs_net) {
  LocalNic n;
  n.host_key = LocalHostKey();
  n.interface = ParamString(ParamId::kNic);
  if (n.interface.empty()) n.interface = DefaultRouteInterface();
  if (n.interface.empty()) n.interface = "lo";
  if (const double gbps = ParamDouble(ParamId::kNicGbps); gbps > 0) {
    n.gbps = gbps;
    n.rate_source = Source::kParam;
  } else if (std::optional<int64_t> mbps = SysfsLinkSpeedMbps(n.interface, sysfs_net)) {
    n.gbps = static_cast<double>(*mbps) / 1000.0;
    n.rate_source = Source::kSysfs;
  } else {
    TRIRACE_INFO(TOPO, "no speed for interface %s; assuming 100 Gbit/s (set TRIRACE_NIC_GBPS)", n.interface);
  }
  return n;
}

}  // namespace trirace::topo
