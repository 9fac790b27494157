// The network interfaces of this machine and the rules every TriRace part
// shares — the one NIC inventory that the TCP transport, hostccl's bootstrap
// and the topology read: which interfaces exist with which address
// (ListNetInterfaces), which ones a name spec selects (NCCL_SOCKET_IFNAME's
// syntax), and what sysfs says about one (link speed, PCI device).
//
// A spec is a comma list of interface name prefixes ("eth,ib"); "^" in front
// excludes the listed ones instead ("^docker,lo"); "=" in front asks for
// exact names ("=eth0,eth1"); both combine ("^=docker0"). The spec comes
// from TRIRACE_NET_IFNAME, else NCCL_SOCKET_IFNAME (InterfaceSpecText).
// What an empty spec means is the caller's rule, stated where it is used:
// the TCP transport takes every up interface but loopback and virtual
// bridges; hostccl's bootstrap takes loopback (a one-host job needs no
// more, and a multi-host job sets the variable, as with NCCL).
//
// Thread safety: stateless.
#ifndef TRIRACE_COMMON_NET_INTERFACES_H_
#define TRIRACE_COMMON_NET_INTERFACES_H_

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trirace {

class InterfaceSpec {
 public:
  static InterfaceSpec Parse(absl::string_view text);
  bool empty() const { return names_.empty(); }
  bool Matches(absl::string_view ifname) const;
  // True if the spec selects loopback explicitly (a non-excluding "lo...").
  bool NamesLoopback() const;

 private:
  std::vector<std::string> names_;
  bool exclude_ = false;
  bool exact_ = false;
};

// TRIRACE_NET_IFNAME, else NCCL_SOCKET_IFNAME, else "". `source` (optional)
// gets the variable's name, or "" when neither is set.
std::string InterfaceSpecText(std::string* source = nullptr);

// One interface that has an address.
struct NetInterface {
  std::string name;
  bool up = false;        // IFF_UP
  bool loopback = false;  // IFF_LOOPBACK
  // Its first IPv4 address, else its first IPv6 address that is not
  // link-local; port 0.
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string pci_path;        // SysfsDevicePath, "" for loopback and virtual devices
  std::optional<int64_t> mbps;  // SysfsLinkSpeedMbps
};

// Every interface with an address, by name (a stable order), from
// getifaddrs and `sysfs_net`. The error names getifaddrs and errno.
absl::StatusOr<std::vector<NetInterface>> ListNetInterfaces(const std::string& sysfs_net = "/sys/class/net");

// The interfaces the net plugin's TCP transport sends through, as NCCL's
// socket transport picks them: the up interfaces `spec` selects; without a
// spec every up interface except loopback, docker* and virbr*. Loopback
// only when nothing else is left, or when the spec names it. In `all`'s
// order.
std::vector<NetInterface> SelectTransportInterfaces(const std::vector<NetInterface>& all, const InterfaceSpec& spec);

// <sysfs_net>/<ifname>/speed in Mbit/s; nullopt when missing, unreadable or
// not positive (loopback and virtual interfaces report -1 or nothing).
std::optional<int64_t> SysfsLinkSpeedMbps(const std::string& ifname,
                                          const std::string& sysfs_net = "/sys/class/net");

// The resolved path of <sysfs_net>/<ifname>/device (the PCI device), or ""
// for an interface without one.
std::string SysfsDevicePath(const std::string& ifname, const std::string& sysfs_net = "/sys/class/net");

}  // namespace trirace

#endif  // TRIRACE_COMMON_NET_INTERFACES_H_
