#include "common/net_interfaces.h"

#include <climits>
#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/params.h"

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

}  // namespace trirace
