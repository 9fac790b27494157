#include "common/net_interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/params.h"
#include "common/status.h"

namespace trirace {

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
  bool hit = false;
  for (const std::string& n : names_) hit |= exact_ ? ifname == n : absl::StartsWith(ifname, n);
  return exclude_ ? !hit : hit;
}

bool InterfaceSpec::NamesLoopback() const {
  if (exclude_) return false;
  for (const std::string& n : names_) {
    if (exact_ ? n == "lo" : absl::StartsWith("lo", n)) return true;
  }
  return false;
}

std::string InterfaceSpecText(std::string* source) {
  std::string text = ParamString(ParamId::kNetIfname);
  const char* from = "TRIRACE_NET_IFNAME";
  if (text.empty()) {
    const char* nccl = std::getenv("NCCL_SOCKET_IFNAME");
    text = nccl != nullptr ? nccl : "";
    from = text.empty() ? "" : "NCCL_SOCKET_IFNAME";
  }
  if (source != nullptr) *source = from;
  return text;
}

std::optional<int64_t> SysfsLinkSpeedMbps(const std::string& ifname, const std::string& sysfs_net) {
  std::ifstream in(sysfs_net + "/" + ifname + "/speed");
  std::string text;
  int64_t mbps = 0;
  if (in && std::getline(in, text) && absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &mbps) && mbps > 0) {
    return mbps;
  }
  return std::nullopt;
}

std::string SysfsDevicePath(const std::string& ifname, const std::string& sysfs_net) {
  const std::string link = sysfs_net + "/" + ifname + "/device";
  char resolved[PATH_MAX];
  if (realpath(link.c_str(), resolved) == nullptr) return "";
  return resolved;
}

std::vector<NetInterface> SelectTransportInterfaces(const std::vector<NetInterface>& all, const InterfaceSpec& spec) {
  auto default_excluded = [](absl::string_view name) {
    return absl::StartsWith(name, "lo") || absl::StartsWith(name, "docker") || absl::StartsWith(name, "virbr");
  };
  std::vector<NetInterface> chosen, loopbacks;
  for (const NetInterface& n : all) {
    if (!n.up) continue;
    if (!spec.empty()) {
      if (!spec.Matches(n.name)) continue;
      if (n.loopback && !spec.NamesLoopback()) {
        loopbacks.push_back(n);
        continue;
      }
    } else if (default_excluded(n.name)) {
      if (n.loopback) loopbacks.push_back(n);
      continue;
    }
    chosen.push_back(n);
  }
  return chosen.empty() ? loopbacks : chosen;  // nothing else: loopback it is
}

absl::StatusOr<std::vector<NetInterface>> ListNetInterfaces(const std::string& sysfs_net) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return SystemError("getifaddrs", errno);
  std::map<std::string, NetInterface> by_name;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    const int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr)->sin6_addr)) {
      continue;
    }
    auto [it, added] = by_name.try_emplace(ifa->ifa_name);
    NetInterface& itf = it->second;
    if (!added && (itf.addr.ss_family == AF_INET || family == AF_INET6)) continue;  // IPv4 first, then the first
    itf.name = ifa->ifa_name;
    itf.up = (ifa->ifa_flags & IFF_UP) != 0;
    itf.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    itf.addr = sockaddr_storage{};
    itf.addr_len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&itf.addr, ifa->ifa_addr, itf.addr_len);
    if (family == AF_INET) reinterpret_cast<sockaddr_in*>(&itf.addr)->sin_port = 0;
    else reinterpret_cast<sockaddr_in6*>(&itf.addr)->sin6_port = 0;
  }
  freeifaddrs(list);
  std::vector<NetInterface> out;
  out.reserve(by_name.size());
  for (auto& [name, itf] : by_name) {
    if (!itf.loopback) {
      itf.pci_path = SysfsDevicePath(name, sysfs_net);
      itf.mbps = SysfsLinkSpeedMbps(name, sysfs_net);
    }
    out.push_back(std::move(itf));
  }
  return out;
}

}  // namespace trirace
