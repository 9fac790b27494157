// The send and receive ends of one TCP comm: a control socket that carries
// frame headers and small messages (moved by the calling thread inside
// isend/test, straight from and into the caller's buffers; payloads of up to
// kEmbeddedBytes inside the header), plus data sockets over which large
// messages are striped by PartWorkers.
//
// Semantics (what NCCL expects of a net plugin):
//  * Messages are matched to receives in the order they were sent; within a
//    grouped receive irecv(n, ...) a message goes to the first unfilled
//    buffer whose tag equals the message's tag.
//  * A receive larger than the message completes with the message's size;
//    a message larger than the posted receive fails the receive with
//    FailedPrecondition, and a reject frame makes the sender's pending or
//    next request fail the same way. The comm is unusable afterwards.
//  * At most kMaxRequests requests per comm; beyond that Isend/Irecv return
//    a null request (retry later).
//  * Peer loss (EOF, reset) fails pending requests with RemoteError; so
//    does a transfer stalled for timeout_ms whose peer's host no longer
//    answers (peer_liveness.h). A peer that is alive but stopped (SIGSTOP,
//    a debugger) is waited for, however long. A sender that
//    closes cleanly fails nothing: every message whose frame header arrived
//    before the EOF still completes; only a receive whose message never
//    came (or a half-sent message) fails.
//  * Close: an isend being done only means its buffer may be reused. Before
//    a send comm whose requests all completed is deleted, FinishSending()
//    waits until the receiver's kernel acknowledged every byte (bounded by
//    timeout_ms), so the close never turns into a reset that discards bytes
//    still in flight.
//
// Thread safety: one thread at a time per comm (NCCL's proxy thread); the
// part workers run in the background and only touch the parts queued to them
// (and their parts_left counters, atomics). The one state both sides write
// is the comm's failure: failure_mu_ guards failure_ (set once, by Fail from
// either side); failed_ mirrors it as an atomic so that failure() needs no
// lock while the comm is healthy.
#ifndef TRIRACE_PLUGIN_TRANSPORT_TCP_TCP_COMM_H_
#define TRIRACE_PLUGIN_TRANSPORT_TCP_TCP_COMM_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "plugin/abi/net_abi.h"
#include "plugin/transport/tcp/part_workers.h"
#include "plugin/transport/tcp/socket.h"
#include "plugin/transport/tcp/wire.h"

namespace trirace::net::tcp {

inline constexpr int kMaxRequests = NCCL_NET_MAX_REQUESTS;
inline constexpr int kMaxRecvs = 8;

struct CommOptions {
  int nthreads = 2;
  uint64_t stripe_min_bytes = 262144;
  int timeout_ms = 10000;
  int rto_min_us = 10000;  // TRIRACE_NET_RTO_MIN_US; 0: kernel setting
};

class TcpComm;

struct TcpRequest {
  enum class Kind { kFree, kSend, kRecv, kFlush };
  struct Sub {
    char* data = nullptr;
    uint64_t capacity = 0;
    int tag = 0;
    uint64_t size = 0;  // bytes of the matched message
    bool matched = false;
  };
  TcpComm* comm = nullptr;
  Kind kind = Kind::kFree;
  int n = 0;
  Sub subs[kMaxRecvs];
  int unmatched = 0;                  // recv: subs still waiting for a header
  int inline_left = 0;                // payloads still moving on the control socket
  std::atomic<int> parts_left{0};     // parts still moving on data sockets
};

// Shared by both ends: sockets, request pool, failure state.
class TcpComm {
 public:
  TcpComm(std::vector<UniqueFd> sockets, const CommOptions& options, bool sending);
  virtual ~TcpComm();
  TcpComm(const TcpComm&) = delete;
  TcpComm& operator=(const TcpComm&) = delete;

  // Advances the control socket; then reports whether `req` is done and
  // fills sizes[0..n) when it is (and frees the request).
  absl::Status Test(TcpRequest* req, int* done, int* sizes);
  // A completed no-op request (iflush on host memory).
  absl::Status NewFlushRequest(void** request);
  bool AnyOutstanding() const;
  // IP TOS and SO_PRIORITY of every socket of the comm (control and data):
  // what a send comm sends, and what a receive comm sends back (TCP's
  // acknowledgements).
  absl::Status SetTosAndPriority(int tos, int priority);

 protected:
  TcpRequest* AllocRequest(TcpRequest::Kind kind);
  void FreeRequest(TcpRequest* req);
  absl::Status failure() const ABSL_LOCKS_EXCLUDED(failure_mu_);
  // Records the first failure; later ones are ignored. Any thread.
  void Fail(absl::Status status) ABSL_LOCKS_EXCLUDED(failure_mu_);
  virtual absl::Status Progress() = 0;
  virtual bool Done(const TcpRequest& req) const = 0;
  // Why `req`, not done, can never complete; OK while it still may.
  virtual absl::Status Lost(const TcpRequest&) const { return absl::OkStatus(); }
  int control_fd() const { return sockets_[0].get(); }
  bool StalledTooLong(int64_t since_ns) const;

  const CommOptions options_;
  std::vector<UniqueFd> sockets_;  // [0] control, [1..] data
  PartWorkers workers_;
  TcpRequest requests_[kMaxRequests];

 private:
  mutable absl::Mutex failure_mu_;
  absl::Status failure_ ABSL_GUARDED_BY(failure_mu_);
  std::atomic<bool> failed_{false};  // failure_ is set; stored (release) under failure_mu_
};

class TcpSendComm : public TcpComm {
 public:
  TcpSendComm(std::vector<UniqueFd> sockets, const CommOptions& options)
      : TcpComm(std::move(sockets), options, /*sending=*/true) {}
  absl::Status Isend(void* data, size_t size, int tag, void** request);
  // Called by closeSend before deletion. When nothing is outstanding and
  // the comm has not failed: shuts every socket down for writing (FIN after
  // the queued bytes) and waits, at most timeout_ms, until the peer
  // acknowledged everything (or closed), discarding what it sends, so that
  // closing cannot reset the connection while bytes are still in flight.
  // With requests outstanding the caller abandons them: no wait.
  void FinishSending();

 private:
  struct Outgoing {
    TcpRequest* req;
    FrameHeader header;
    const char* payload;  // inline payload, or null
    uint64_t total;       // header + inline payload
    uint64_t sent = 0;
  };
  absl::Status Progress() override;
  bool Done(const TcpRequest& req) const override;
  absl::Status FlushControl();
  absl::Status CheckBackChannel();

  std::deque<Outgoing> outgoing_;
  unsigned calls_ = 0;
  int64_t blocked_since_ns_ = 0;  // the control socket has been full since
};

class TcpRecvComm : public TcpComm {
 public:
  TcpRecvComm(std::vector<UniqueFd> sockets, const CommOptions& options)
      : TcpComm(std::move(sockets), options, /*sending=*/false) {}
  absl::Status Irecv(int n, void** data, size_t* sizes, int* tags, void** request);

 private:
  absl::Status Progress() override;
  bool Done(const TcpRequest& req) const override;
  absl::Status Lost(const TcpRequest& req) const override;
  absl::Status ReadHeader(bool* complete);
  // Finds the receive buffer for header_; false if none is posted yet.
  absl::Status Dispatch(bool* dispatched);
  // While header_ waits for its receive: sets sender_closed_ when the
  // sender closed behind it and it waited past the timeout.
  absl::Status PeekForClose();
  absl::Status ReadPayload(bool* complete);
  void Reject(const TcpRequest::Sub& sub);

  enum class State { kHeader, kPayload };
  State state_ = State::kHeader;
  FrameHeader header_{};
  uint64_t header_read_ = 0;
  TcpRequest* payload_req_ = nullptr;
  TcpRequest::Sub* payload_sub_ = nullptr;
  uint64_t payload_read_ = 0;
  int64_t partial_since_ns_ = 0;  // a header or payload is half read
  bool sender_closed_ = false;    // EOF on the control socket after a whole frame
  int64_t head_waits_since_ns_ = 0;  // header_ is whole and no receive is posted for it
  int64_t idle_since_ns_ = 0;         // receives are posted and no byte has come since
  int64_t last_liveness_check_ns_ = 0;
  std::deque<TcpRequest*> posted_;  // receives with unmatched buffers, oldest first
};

}  // namespace trirace::net::tcp

#endif  // TRIRACE_PLUGIN_TRANSPORT_TCP_TCP_COMM_H_
