// Network interfaces the TCP transport offers as NCCL devices.
//
// Selection follows NCCL's socket transport, with the spec rules every
// TriRace part shares (common/net_interfaces.h). Without a spec every up
// interface except loopback, docker* and virbr* is used; loopback is used
// only when nothing else exists or when the spec names it.
//
// Thread safety: the functions are thread-safe (no shared state).
#ifndef TRIRACE_PLUGIN_TRANSPORT_TCP_INTERFACES_H_
#define TRIRACE_PLUGIN_TRANSPORT_TCP_INTERFACES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/net_interfaces.h"
#include "plugin/transport/tcp/socket.h"

namespace trirace::net::tcp {

struct Interface {
  std::string name;
  SockAddr addr;          // the address listeners bind to (port 0)
  std::string pci_path;   // realpath of /sys/class/net/<name>/device, or ""
  int speed_mbps = 0;     // from sysfs; kDefaultSpeedMbps when unknown
  bool loopback = false;
};

inline constexpr int kDefaultSpeedMbps = 10000;

// The data sockets per comm that TRIRACE_NET_NSOCKS=0 (auto) picks: 4 on
// loopback and on links of 25 Gbit/s or more, where one TCP stream is
// bound by one core; 1 on slower links, where one stream fills the link
// and more streams only add flows, and message tails, that queue and drop
// at the switch (NCCL's own socket transport also keeps to one socket
// unless it knows the NIC).
int AutoDataSockets(int speed_mbps, bool loopback);

// The interfaces to use, in a stable order (by name), one address each
// (IPv4 preferred; IPv6 link-local addresses are skipped).
absl::StatusOr<std::vector<Interface>> DiscoverInterfaces(const InterfaceSpec& spec);

}  // namespace trirace::net::tcp

#endif  // TRIRACE_PLUGIN_TRANSPORT_TCP_INTERFACES_H_
