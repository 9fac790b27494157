// Whether the host at the other end of a TCP connection still answers.
//
// A transfer that stalls is not by itself a reason to fail a comm: a rank
// stopped by a debugger, a long checkpoint or SIGSTOP stops reading and
// writing, but its kernel still acknowledges data, zero-window probes and
// keepalive probes, and the job goes on once it continues (as it does over
// NCCL's own transports). A host that is gone (powered off, cable or link
// cut, network namespace removed) answers nothing. The kernel knows the
// difference: after it sent something that needs an answer (a
// retransmission, a zero-window probe, a keepalive probe), it counts the
// unanswered ones in a row and the time since the last segment from the
// peer (TCP_INFO: tcpi_retransmits, tcpi_probes, tcpi_last_ack_recv).
//
// Why not TCP_USER_TIMEOUT: since Linux 5.11 it also aborts a connection
// whose receiver keeps advertising a zero window for that long, although
// that receiver answers every probe: a rank stopped for longer than the
// timeout while a large message fills its buffers would lose its
// connections. The plugin therefore leaves TCP_USER_TIMEOUT unset, keeps
// keepalive on (so an idle connection's peer is probed too), and asks
// PeerAnswers() whenever a transfer has made no progress for the timeout.
//
// Thread safety: stateless; any thread, on any socket it may read.
#ifndef TRIRACE_PLUGIN_TRANSPORT_TCP_PEER_LIVENESS_H_
#define TRIRACE_PLUGIN_TRANSPORT_TCP_PEER_LIVENESS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace trirace::net::tcp {

// What the kernel says about the peer of one connected socket.
struct PeerSilence {
  bool socket_error = false;   // SO_ERROR is set, or the connection is closed (reset, timed out)
  int error = 0;               // that error
  int unanswered = 0;          // retransmissions or probes in a row with no answer
  int64_t silent_ms = 0;       // since the last segment from the peer
};

// Reads TCP_INFO and SO_ERROR of `fd`; false if TCP_INFO cannot be read.
bool ReadPeerSilence(int fd, PeerSilence* out);

// The rule: the peer is gone when the socket has an error, or when at least
// kUnansweredToFail things sent to it in a row got no answer and nothing
// came from it for longer than `timeout_ms`. Two in a row, not one: a
// probe still in flight when the check runs is not silence.
inline constexpr int kUnansweredToFail = 2;
bool PeerGone(const PeerSilence& s, int timeout_ms);

// OK while the peer answers (or TCP_INFO cannot be read); else a remote
// error (ncclRemoteError) naming `what` and what went unanswered for how
// long.
absl::Status PeerAnswers(int fd, int timeout_ms, absl::string_view what);

// Keepalive settings for a connection whose peer must be judged within
// `timeout_ms`: the first probe after a third of it idle, then one each
// third, so two probes have gone unanswered by the time it has passed and
// PeerAnswers() can tell. The kernel itself gives up only after
// kKeepaliveProbes unanswered ones (about 3.3 times the timeout): a
// backstop, late enough that a blip shorter than the timeout (a link down
// and up, the neighbour entry learnt again) never ends a connection.
inline constexpr int kKeepaliveProbes = 9;
struct KeepaliveTimes {
  int idle_s;
  int interval_s;
  int count;
};
KeepaliveTimes KeepaliveFor(int timeout_ms);

}  // namespace trirace::net::tcp

#endif  // TRIRACE_PLUGIN_TRANSPORT_TCP_PEER_LIVENESS_H_
