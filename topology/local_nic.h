// The host key and the NIC of this process as the parameters and the
// machine give them, for the model used without a topology file
// (system_links.h HostNicSystem) and for the identity a rank tells its
// peers.
//
//   host key   TRIRACE_HOST_ID, else the host name (test beds that run
//              several "hosts" on one machine set the variable)
//   interface  TRIRACE_NIC, else the interface of the default IPv4 route,
//              else "lo"
//   rate       TRIRACE_NIC_GBPS, else <sysfs_net>/<interface>/speed, else
//              100 Gbit/s (one INFO line says so)
//
// Thread safety: stateless.
#ifndef TRIRACE_TOPOLOGY_LOCAL_NIC_H_
#define TRIRACE_TOPOLOGY_LOCAL_NIC_H_

#include <string>

#include "topology/model.h"

namespace trirace::topo {

struct LocalNic {
  std::string host_key;
  std::string interface;
  double gbps = 100;
  Source rate_source = Source::kDefault;  // kParam, kSysfs or kDefault
};

// TRIRACE_HOST_ID, else the host name.
std::string LocalHostKey();

LocalNic LocalNicFromParams(const std::string& sysfs_net = "/sys/class/net");

// The interface of the default IPv4 route in `proc_net_route` (the format
// of /proc/net/route), or "" when there is none.
std::string DefaultRouteInterface(const std::string& proc_net_route = "/proc/net/route");

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_LOCAL_NIC_H_
