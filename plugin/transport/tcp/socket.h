// Socket helpers for the TCP transport: an owning fd, socket addresses that
// fit in a connection handle, and the option set every data socket gets.
//
// Thread safety: UniqueFd is a value type (one owner); the free functions are
// thread-safe.
#ifndef TRIRACE_PLUGIN_TRANSPORT_TCP_SOCKET_H_
#define TRIRACE_PLUGIN_TRANSPORT_TCP_SOCKET_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trirace::net::tcp {

// Owns one file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// An IPv4 or IPv6 socket address in a fixed-size, trivially copyable form
// (it travels inside the NCCL connection handle).
struct SockAddr {
  union {
    sockaddr sa;
    sockaddr_in in4;
    sockaddr_in6 in6;
  } u;

  socklen_t length() const;
  uint16_t port() const;
  bool IsLoopback() const;
  std::string ToString() const;  // "1.2.3.4:5" or "[::1]:5"
};
static_assert(sizeof(SockAddr) == 28, "SockAddr is part of the handle layout");

// Traffic-class settings applied to every socket of a comm.
struct SocketOptions {
  int traffic_class = -1;  // -1: leave the kernel defaults
  int timeout_ms = 0;      // keepalive probing (peer_liveness.h); 0: kernel defaults
  int rto_min_us = 0;      // TCP_RTO_MIN_US; 0: kernel setting
};

// A non-blocking TCP socket of `addr`'s family with CLOEXEC.
absl::StatusOr<UniqueFd> NewTcpSocket(const SockAddr& addr);
// A listening socket bound to `addr` (port 0 picks one); `bound` receives
// the address actually bound.
absl::StatusOr<UniqueFd> ListenOn(const SockAddr& addr, SockAddr* bound);
// TCP_NODELAY, keepalive/user timeout, the minimum RTO and the traffic
// class. A failure to set the priority/TOS (e.g. missing CAP_NET_ADMIN for
// priority > 6) is reported once as a warning, not an error; a kernel
// without TCP_RTO_MIN_US is reported once at INFO.
absl::Status ConfigureDataSocket(int fd, const SocketOptions& options);
// Sets O_NONBLOCK.
absl::Status SetNonBlocking(int fd);

// The socket priority and IP TOS byte for a trafficClass value (0..255):
// TOS = trafficClass, priority = trafficClass >> 5 (the IP precedence).
int PriorityForTrafficClass(int traffic_class);

// Sets the IP TOS byte (IPv6 traffic class) and then SO_PRIORITY of `fd`
// (in that order: on Linux setting IP_TOS also resets the priority).
absl::Status SetTosAndPriority(int fd, int tos, int priority);

// TCP_RTO_MIN_US (IPPROTO_TCP level) from <linux/tcp.h> of Linux 6.15;
// older headers lack it.
inline constexpr int kTcpRtoMinUs = 45;

// Sets the socket's minimum retransmission timeout to `us` microseconds,
// or to the smallest value the kernel takes above it (the floor is two
// jiffies). Returns the minimum RTO now in force (whole jiffies, so often
// a little above `us`), or an error: kUnimplemented where the
// kernel has no TCP_RTO_MIN_US (before Linux 6.15). `us` in (0, 200000].
absl::StatusOr<int> SetRtoMin(int fd, int us);

}  // namespace trirace::net::tcp

#endif  // TRIRACE_PLUGIN_TRANSPORT_TCP_SOCKET_H_
