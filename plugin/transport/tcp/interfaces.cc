#include "plugin/transport/tcp/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/params.h"
#include "common/status.h"

namespace trirace::net::tcp {
namespace {

bool IsDefaultExcluded(absl::string_view name) {
  return absl::StartsWith(name, "lo") || absl::StartsWith(name, "docker") ||
         absl::StartsWith(name, "virbr");
}

std::string PciPath(const std::string& ifname) {
  std::string link = "/sys/class/net/" + ifname + "/device";
  char resolved[PATH_MAX];
  if (realpath(link.c_str(), resolved) == nullptr) return "";
  return resolved;
}

int SpeedMbps(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  std::string text;
  int speed = 0;
  if (in && std::getline(in, text) && absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &speed) &&
      speed > 0) {
    return speed;
  }
  return kDefaultSpeedMbps;
}

}  // namespace

InterfaceSpec InterfaceSpec::Parse(absl::string_view text) {
  InterfaceSpec spec;
  text = absl::StripAsciiWhitespace(text);
  if (absl::ConsumePrefix(&text, "^")) spec.exclude_ = true;
  if (absl::ConsumePrefix(&text, "=")) spec.exact_ = true;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    spec.names_.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return spec;
}

bool InterfaceSpec::Matches(absl::string_view ifname) const {
  bool hit = std::any_of(names_.begin(), names_.end(), [&](const std::string& n) {
    return exact_ ? ifname == n : absl::StartsWith(ifname, n);
  });
  return exclude_ ? !hit : hit;
}

bool InterfaceSpec::NamesLoopback() const {
  if (exclude_) return false;
  return std::any_of(names_.begin(), names_.end(),
                     [&](const std::string& n) { return exact_ ? n == "lo" : absl::StartsWith("lo", n); });
}

std::string InterfaceSpecText() {
  const std::string& own = ParamString(ParamId::kNetIfname);
  if (!own.empty()) return own;
  const char* nccl = std::getenv("NCCL_SOCKET_IFNAME");
  return nccl ? nccl : "";
}

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
    itf.pci_path = itf.loopback ? "" : PciPath(itf.name);
    itf.speed_mbps = itf.loopback ? kDefaultSpeedMbps : SpeedMbps(itf.name);
  }
  return chosen;
}

int AutoDataSockets(int speed_mbps, bool loopback) {
  constexpr int kStriped = 4;
  constexpr int kStripeFromMbps = 25000;
  return loopback || speed_mbps >= kStripeFromMbps ? kStriped : 1;
}

}  // namespace trirace::net::tcp
