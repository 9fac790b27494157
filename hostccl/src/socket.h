// Small TCP helpers for hostccl's bootstrap: an owning socket, addresses,
// interface selection and deadline-bounded send/receive of whole buffers.
//
// Interface rules (BootstrapAddress): the spec rules every TriRace part
// shares (common/net_interfaces.h: TRIRACE_NET_IFNAME, else
// NCCL_SOCKET_IFNAME), and "lo" (loopback) when neither is set. The first
// matching interface with an IPv4 address wins, then one with IPv6.
//
// Thread safety: functions are thread-safe; a Socket is owned by one thread.
#ifndef TRIRACE_HOSTCCL_SRC_SOCKET_H_
#define TRIRACE_HOSTCCL_SRC_SOCKET_H_

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trirace::hostccl {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;
  std::string ToString() const;
};

// The address the bootstrap listens on (port 0), from the interface rules.
absl::StatusOr<SockAddr> BootstrapAddress();

// A listening socket on `addr`; *bound receives the address with its port.
absl::StatusOr<Socket> ListenOn(const SockAddr& addr, SockAddr* bound);
// Accepts one connection, waiting at most `timeout_ms`; an invalid Socket on
// timeout.
absl::StatusOr<Socket> AcceptFor(const Socket& listener, int timeout_ms);
// Connects, retrying refused attempts until `deadline_ns` (MonotonicNs).
absl::StatusOr<Socket> ConnectTo(const SockAddr& addr, int64_t deadline_ns);
// Sends / receives exactly `size` bytes before `deadline_ns`. RecvAll reports
// a peer that closed first as a RemoteError.
absl::Status SendAll(const Socket& s, const void* data, size_t size, int64_t deadline_ns);
absl::Status RecvAll(const Socket& s, void* data, size_t size, int64_t deadline_ns);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_SOCKET_H_
