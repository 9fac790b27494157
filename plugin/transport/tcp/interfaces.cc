#include "plugin/transport/tcp/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "absl/strings/match.h"
#include "common/status.h"

namespace trirace::net::tcp {
namespace {

bool IsDefaultExcluded(absl::string_view name) {
  return absl::StartsWith(name, "lo") || absl::StartsWith(name, "docker") ||
         absl::StartsWith(name, "virbr");
}

}  // namespace

absl::StatusOr<std::vector<Interface>> DiscoverInterfaces(const InterfaceSpec& spec) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return SystemError("getifaddrs", errno);
  std::map<std::string, Interface> by_name;  // ordered: stable device indices
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
    }
    std::string name = ifa->ifa_name;
    auto it = by_name.find(name);
    if (it != by_name.end() && (it->second.addr.u.sa.sa_family == AF_INET || family == AF_INET6)) {
      continue;  // keep one address per interface, IPv4 first
    }
    Interface itf;
    itf.name = name;
    itf.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    std::memcpy(&itf.addr.u, ifa->ifa_addr,
                family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    if (family == AF_INET) itf.addr.u.in4.sin_port = 0;
    else itf.addr.u.in6.sin6_port = 0;
    by_name[name] = itf;
  }
  freeifaddrs(list);

  std::vector<Interface> chosen;
  std::vector<Interface> loopbacks;
  for (auto& [name, itf] : by_name) {
    if (!spec.empty()) {
      if (!spec.Matches(name)) continue;
      if (itf.loopback && !spec.NamesLoopback()) {
        loopbacks.push_back(itf);
        continue;
      }
    } else if (IsDefaultExcluded(name)) {
      if (itf.loopback) loopbacks.push_back(itf);
      continue;
    }
    chosen.push_back(itf);
  }
  if (chosen.empty()) chosen = loopbacks;  // nothing else: loopback it is
  for (Interface& itf : chosen) {
    itf.pci_path = itf.loopback ? "" : SysfsDevicePath(itf.name);
    itf.speed_mbps = itf.loopback ? kDefaultSpeedMbps
                                  : static_cast<int>(SysfsLinkSpeedMbps(itf.name).value_or(kDefaultSpeedMbps));
  }
  return chosen;
}

int AutoDataSockets(int speed_mbps, bool loopback) {
  constexpr int kStriped = 4;
  constexpr int kStripeFromMbps = 25000;
  return loopback || speed_mbps >= kStripeFromMbps ? kStriped : 1;
}

}  // namespace trirace::net::tcp
