#include "plugin/transport/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "plugin/transport/tcp/peer_liveness.h"

namespace trirace::net::tcp {
namespace {

constexpr int kKernelRtoMinUs = 200000;  // the kernel's own floor, and the most it accepts

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

socklen_t SockAddr::length() const {
  return u.sa.sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

uint16_t SockAddr::port() const {
  return ntohs(u.sa.sa_family == AF_INET6 ? u.in6.sin6_port : u.in4.sin_port);
}

bool SockAddr::IsLoopback() const {
  if (u.sa.sa_family == AF_INET) return (ntohl(u.in4.sin_addr.s_addr) >> 24) == 127;
  if (u.sa.sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&u.in6.sin6_addr);
  return false;
}

std::string SockAddr::ToString() const {
  char text[INET6_ADDRSTRLEN] = "?";
  if (u.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &u.in4.sin_addr, text, sizeof(text));
    return absl::StrCat(text, ":", port());
  }
  if (u.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &u.in6.sin6_addr, text, sizeof(text));
    return absl::StrCat("[", text, "]:", port());
  }
  return absl::StrCat("<family ", u.sa.sa_family, ">");
}

absl::Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return SystemError("fcntl(O_NONBLOCK)", errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> NewTcpSocket(const SockAddr& addr) {
  int family = addr.u.sa.sa_family;
  if (family != AF_INET && family != AF_INET6) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket address family ", family, " is not AF_INET or AF_INET6"));
  }
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
  if (!fd.valid()) return SystemError("socket(SOCK_STREAM)", errno);
  return fd;
}

absl::StatusOr<UniqueFd> ListenOn(const SockAddr& addr, SockAddr* bound) {
  auto fd = NewTcpSocket(addr);
  if (!fd.ok()) return fd.status();
  int one = 1;
  setsockopt(fd->get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd->get(), &addr.u.sa, addr.length()) != 0) {
    return SystemError(absl::StrCat("bind(", addr.ToString(), ")"), errno);
  }
  if (::listen(fd->get(), SOMAXCONN) != 0) return SystemError("listen", errno);
  *bound = SockAddr{};
  socklen_t len = sizeof(bound->u);
  if (getsockname(fd->get(), &bound->u.sa, &len) != 0) return SystemError("getsockname", errno);
  return std::move(*fd);
}

int PriorityForTrafficClass(int traffic_class) { return (traffic_class >> 5) & 7; }

absl::Status ConfigureDataSocket(int fd, const SocketOptions& options) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return SystemError("setsockopt(TCP_NODELAY)", errno);
  }
  if (options.timeout_ms > 0) {
    // Keepalive probes an idle connection's peer, so PeerAnswers() can tell
    // a host that is gone from a process that is only stopped.
    // TCP_USER_TIMEOUT stays unset: it would also abort a connection to a
    // stopped receiver whose window stays zero (peer_liveness.h).
    KeepaliveTimes k = KeepaliveFor(options.timeout_ms);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &k.idle_s, sizeof(k.idle_s));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &k.interval_s, sizeof(k.interval_s));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &k.count, sizeof(k.count));
  }
  if (options.rto_min_us > 0) {
    absl::StatusOr<int> set = SetRtoMin(fd, options.rto_min_us);
    if (!set.ok()) {
      TRIRACE_INFO_ONCE(NET, "TRIRACE_NET_RTO_MIN_US=%d not applied: %s", options.rto_min_us,
                        set.status().ToString());
    } else {
      TRIRACE_INFO_ONCE(NET, "TRIRACE_NET_RTO_MIN_US=%d: minimum RTO %d us (whole kernel ticks)",
                        options.rto_min_us, *set);
    }
  }
  if (options.traffic_class >= 0) {
    int tos = options.traffic_class & 0xff;
    int priority = PriorityForTrafficClass(options.traffic_class);
    absl::Status st = SetTosAndPriority(fd, tos, priority);
    if (!st.ok()) {
      TRIRACE_WARN_ONCE(NET, "trafficClass %d: %s", options.traffic_class, st.ToString());
    }
  }
  return absl::OkStatus();
}

absl::Status SetTosAndPriority(int fd, int tos, int priority) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  int rc = local.ss_family == AF_INET6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
                                       : setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
  if (rc != 0) return SystemError(absl::StrCat("setsockopt(IP_TOS, ", tos, ")"), errno);
  if (setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &priority, sizeof(priority)) != 0) {
    return SystemError(absl::StrCat("setsockopt(SO_PRIORITY, ", priority, ")"), errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SetRtoMin(int fd, int us) {
  if (us <= 0 || us > kKernelRtoMinUs) {
    return absl::InvalidArgumentError(
        absl::StrCat("minimum RTO ", us, " us: expected 1 to ", kKernelRtoMinUs));
  }
  // The kernel refuses values under two jiffies (8 ms at HZ=250); its HZ is
  // not visible from here, so double until it accepts.
  for (int v = us;; v = std::min(2 * v, kKernelRtoMinUs)) {
    if (setsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &v, sizeof(v)) == 0) {
      int effective = v;  // whole jiffies, so usually a little above v
      socklen_t len = sizeof(effective);
      getsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &effective, &len);
      return effective;
    }
    if (errno == ENOPROTOOPT) {
      return absl::UnimplementedError(
          "this kernel has no TCP_RTO_MIN_US (Linux 6.15 or later); its own minimum RTO applies");
    }
    if (errno != EINVAL || v == kKernelRtoMinUs) {
      return SystemError(absl::StrCat("setsockopt(TCP_RTO_MIN_US, ", v, ")"), errno);
    }
  }
}

}  // namespace trirace::net::tcp
