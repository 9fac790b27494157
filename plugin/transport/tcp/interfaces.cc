#include "plugin/transport/tcp/interfaces.h"

#include <algorithm>
#include <cstring>


namespace trirace::net::tcp {

absl::StatusOr<std::vector<Interface>> DiscoverInterfaces(const InterfaceSpec& spec) {
  absl::StatusOr<std::vector<NetInterface>> all = ListNetInterfaces();
  if (!all.ok()) return all.status();
  std::vector<Interface> chosen;
  for (const NetInterface& n : SelectTransportInterfaces(*all, spec)) {
    Interface itf;
    itf.name = n.name;
    itf.loopback = n.loopback;
    std::memcpy(&itf.addr.u, &n.addr, std::min<size_t>(n.addr_len, sizeof(itf.addr.u)));
    itf.pci_path = n.pci_path;
    itf.speed_mbps = n.loopback ? kDefaultSpeedMbps : static_cast<int>(n.mbps.value_or(kDefaultSpeedMbps));
    chosen.push_back(itf);
  }
  return chosen;
}

int AutoDataSockets(int speed_mbps, bool loopback) {
  constexpr int kStriped = 4;
  constexpr int kStripeFromMbps = 25000;
  return loopback || speed_mbps >= kStripeFromMbps ? kStriped : 1;
}

}  // namespace trirace::net::tcp
