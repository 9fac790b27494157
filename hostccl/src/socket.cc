#include "hostccl/src/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "common/net_interfaces.h"
#include "common/params.h"
#include "common/status.h"

namespace trirace::hostccl {
namespace {

int RemainingMs(int64_t deadline_ns) {
  int64_t left = deadline_ns - MonotonicNs();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(left / 1000000 + 1, 1000));
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) close(fd_);
}

std::string SockAddr::ToString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (storage.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
    return absl::StrCat(host, ":", port);
  }
  auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
  port = ntohs(a->sin6_port);
  return absl::StrCat("[", host, "]:", port);
}

absl::StatusOr<SockAddr> BootstrapAddress() {
  std::string source;
  std::string text = InterfaceSpecText(&source);
  if (text.empty()) {
    text = "lo";  // the bootstrap's rule for an empty spec (common/net_interfaces.h)
    source = "default";
  }
  const InterfaceSpec spec = InterfaceSpec::Parse(text);
  absl::StatusOr<std::vector<NetInterface>> all = ListNetInterfaces();
  if (!all.ok()) return all.status();
  SockAddr found;
  // The first matching interface with an IPv4 address, else with IPv6.
  for (int family : {AF_INET, AF_INET6}) {
    for (const NetInterface& n : *all) {
      if (found.len != 0) break;
      if (n.addr.ss_family != family || !spec.Matches(n.name)) continue;
      found.storage = n.addr;
      found.len = n.addr_len;
    }
  }
  if (found.len == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hostccl bootstrap: no network interface matches %s='%s' (comma list of name prefixes, ^ to "
        "exclude, = for exact names)", source, text));
  }
  return found;
}

absl::StatusOr<Socket> ListenOn(const SockAddr& addr, SockAddr* bound) {
  Socket s(socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return SystemError("socket", errno);
  SockAddr a = addr;
  if (a.storage.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&a.storage)->sin_port = 0;
  else reinterpret_cast<sockaddr_in6*>(&a.storage)->sin6_port = 0;
  if (bind(s.fd(), reinterpret_cast<const sockaddr*>(&a.storage), a.len) != 0) {
    return SystemError(absl::StrCat("bind ", a.ToString()), errno);
  }
  if (listen(s.fd(), 512) != 0) return SystemError("listen", errno);
  bound->len = sizeof(bound->storage);
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&bound->storage), &bound->len) != 0) {
    return SystemError("getsockname", errno);
  }
  return s;
}

absl::StatusOr<Socket> AcceptFor(const Socket& listener, int timeout_ms) {
  pollfd pfd{listener.fd(), POLLIN, 0};
  int n = poll(&pfd, 1, timeout_ms);
  if (n < 0 && errno != EINTR) return SystemError("poll", errno);
  if (n <= 0) return Socket();
  Socket s(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!s.valid() && errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
    return SystemError("accept", errno);
  }
  return s;
}

absl::StatusOr<Socket> ConnectTo(const SockAddr& addr, int64_t deadline_ns) {
  for (;;) {
    Socket s(socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return SystemError("socket", errno);
    if (connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) == 0) {
      int one = 1;
      setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return s;
    }
    int err = errno;
    if ((err != ECONNREFUSED && err != EINTR && err != ETIMEDOUT) || MonotonicNs() > deadline_ns) {
      return absl::UnavailableError(absl::StrFormat("cannot reach the hostccl rendezvous at %s: %s",
                                                    addr.ToString(), std::strerror(err)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

absl::Status SendAll(const Socket& s, const void* data, size_t size, int64_t deadline_ns) {
  auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = send(s.fd(), p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return RemoteError(absl::StrCat("send: ", std::strerror(errno)));
    int ms = RemainingMs(deadline_ns);
    if (ms == 0) return absl::DeadlineExceededError("send timed out");
    pollfd pfd{s.fd(), POLLOUT, 0};
    poll(&pfd, 1, ms);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(const Socket& s, void* data, size_t size, int64_t deadline_ns) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = recv(s.fd(), p, size, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return RemoteError("connection closed by the other side");
    if (errno != EAGAIN && errno != EINTR) return RemoteError(absl::StrCat("recv: ", std::strerror(errno)));
    int ms = RemainingMs(deadline_ns);
    if (ms == 0) return absl::DeadlineExceededError("receive timed out");
    pollfd pfd{s.fd(), POLLIN, 0};
    poll(&pfd, 1, ms);
  }
  return absl::OkStatus();
}

}  // namespace trirace::hostccl
