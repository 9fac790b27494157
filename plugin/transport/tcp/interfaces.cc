#include "plugin/transport/tcp/interfaces.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"

namespace trirace::net::tcp {
namespace {

bool IsDefaultExcluded(absl::string_view name) {
  return absl::StartsWith(name, "lo") || absl::StartsWith(name, "docker") ||
         absl::StartsWith(name, "virbr");
}

}  // namespace

absl::StatusOr<std::vector<Interface>> DiscoverInterfaces(const InterfaceSpec& spec) {
  absl::StatusOr<std::vector<NetInterface>> all = ListNetInterfaces();
  if (!all.ok()) return all.status();
  std::vector<Interface> chosen;
  std::vector<Interface> loopbacks;
  for (const NetInterface& n : *all) {
    if (!n.up) continue;
    Interface itf;
    itf.name = n.name;
    itf.loopback = n.loopback;
    std::memcpy(&itf.addr.u, &n.addr, std::min<size_t>(n.addr_len, sizeof(itf.addr.u)));
    itf.pci_path = n.pci_path;
    itf.speed_mbps = n.loopback ? kDefaultSpeedMbps : static_cast<int>(n.mbps.value_or(kDefaultSpeedMbps));
    if (!spec.empty()) {
      if (!spec.Matches(itf.name)) continue;
      if (itf.loopback && !spec.NamesLoopback()) {
        loopbacks.push_back(itf);
        continue;
      }
    } else if (IsDefaultExcluded(itf.name)) {
      if (itf.loopback) loopbacks.push_back(itf);
      continue;
    }
    chosen.push_back(itf);
  }
  if (chosen.empty()) chosen = loopbacks;  // nothing else: loopback it is
  return chosen;
}

int AutoDataSockets(int speed_mbps, bool loopback) {
  constexpr int kStriped = 4;
  constexpr int kStripeFromMbps = 25000;
  return loopback || speed_mbps >= kStripeFromMbps ? kStriped : 1;
}

}  // namespace trirace::net::tcp
