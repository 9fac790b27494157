#include "plugin/transport/tcp/peer_liveness.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace trirace::net::tcp {

bool ReadPeerSilence(int fd, PeerSilence* out) {
  *out = PeerSilence{};
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
    out->socket_error = true;
    out->error = err;
    return true;
  }
  tcp_info info{};
  len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  if (info.tcpi_state == TCP_CLOSE) {  // reset or timed out, its error already taken by a call
    out->socket_error = true;
    out->error = ECONNRESET;
    return true;
  }
  out->unanswered = std::max<int>(info.tcpi_retransmits, info.tcpi_probes);
  out->silent_ms = info.tcpi_last_ack_recv;
  return true;
}

bool PeerGone(const PeerSilence& s, int timeout_ms) {
  if (s.socket_error) return true;
  return s.unanswered >= kUnansweredToFail && s.silent_ms > timeout_ms;
}

absl::Status PeerAnswers(int fd, int timeout_ms, absl::string_view what) {
  PeerSilence s;
  if (!ReadPeerSilence(fd, &s) || !PeerGone(s, timeout_ms)) return absl::OkStatus();
  if (s.socket_error) {
    return RemoteError(absl::StrCat(what, ": the connection failed: ", std::strerror(s.error)));
  }
  return RemoteError(absl::StrCat(what, ": the peer's host has not answered for ", s.silent_ms, " ms (",
                                  s.unanswered, " retransmissions or probes in a row unanswered; "
                                  "TRIRACE_NET_TIMEOUT_MS=", timeout_ms, "): host down or unreachable"));
}

KeepaliveTimes KeepaliveFor(int timeout_ms) {
  int third = std::max(1, timeout_ms / 3000);
  return KeepaliveTimes{third, third, kKeepaliveProbes};
}

}  // namespace trirace::net::tcp
