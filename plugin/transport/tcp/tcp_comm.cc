#include "plugin/transport/tcp/tcp_comm.h"

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "plugin/transport/tcp/peer_liveness.h"

namespace trirace::net::tcp {
namespace {

constexpr uint64_t kMinPartBytes = 16384;
constexpr int kLingerPollMs = 1;  // how often a closing sender re-checks the unacknowledged bytes

std::vector<int> DataFds(const std::vector<UniqueFd>& sockets) {
  std::vector<int> fds;
  for (size_t i = 1; i < sockets.size(); ++i) fds.push_back(sockets[i].get());
  return fds;
}

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

constexpr int64_t kLivenessCheckMs = 100;  // TCP_INFO reads of an idle receive

absl::Status ControlSocketError(absl::string_view what, int err) {
  if (err == EPIPE || err == ECONNRESET || err == ETIMEDOUT || err == ENOTCONN) {
    return RemoteError(absl::StrCat(what, " on the control socket: peer lost (", strerror(err), ")"));
  }
  return SystemError(absl::StrCat(what, " on the control socket"), err);
}

}  // namespace

TcpComm::TcpComm(std::vector<UniqueFd> sockets, const CommOptions& options, bool sending)
    : options_(options),
      sockets_(std::move(sockets)),
      workers_(DataFds(sockets_), options.nthreads, sending, options.timeout_ms,
               [this](absl::Status status) { Fail(std::move(status)); }) {
  for (TcpRequest& r : requests_) r.comm = this;
}

TcpComm::~TcpComm() = default;

TcpRequest* TcpComm::AllocRequest(TcpRequest::Kind kind) {
  for (TcpRequest& r : requests_) {
    if (r.kind == TcpRequest::Kind::kFree) {
      r.kind = kind;
      r.n = 0;
      r.unmatched = 0;
      r.inline_left = 0;
      r.parts_left.store(0, std::memory_order_relaxed);
      return &r;
    }
  }
  return nullptr;
}

void TcpComm::FreeRequest(TcpRequest* req) { req->kind = TcpRequest::Kind::kFree; }

absl::Status TcpComm::failure() const {
  if (!failed_.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::MutexLock lock(&failure_mu_);
  return failure_;
}

void TcpComm::Fail(absl::Status status) {
  absl::MutexLock lock(&failure_mu_);
  if (!failure_.ok()) return;
  failure_ = std::move(status);
  failed_.store(true, std::memory_order_release);
}

bool TcpComm::StalledTooLong(int64_t since_ns) const {
  return since_ns != 0 && MonotonicNs() - since_ns > int64_t{options_.timeout_ms} * 1000000;
}

absl::Status TcpComm::NewFlushRequest(void** request) {
  *request = AllocRequest(TcpRequest::Kind::kFlush);
  return absl::OkStatus();
}

bool TcpComm::AnyOutstanding() const {
  for (const TcpRequest& r : requests_) {
    if (r.kind != TcpRequest::Kind::kFree) return true;
  }
  return false;
}

absl::Status TcpComm::Test(TcpRequest* req, int* done, int* sizes) {
  *done = 0;
  if (req->kind == TcpRequest::Kind::kFree) {
    return absl::InvalidArgumentError("test: request is not outstanding (already completed?)");
  }
  absl::Status st;
  if (req->kind != TcpRequest::Kind::kFlush && !Done(*req)) {
    st = Progress();
    if (!Done(*req)) return st.ok() ? Lost(*req) : st;
  }
  if (sizes != nullptr) {
    for (int i = 0; i < req->n; ++i) sizes[i] = static_cast<int>(req->subs[i].size);
  }
  *done = 1;
  FreeRequest(req);
  return absl::OkStatus();
}

absl::Status TcpComm::SetTosAndPriority(int tos, int priority) {
  for (const UniqueFd& fd : sockets_) {
    TRIRACE_RETURN_IF_ERROR(tcp::SetTosAndPriority(fd.get(), tos, priority));
  }
  return absl::OkStatus();
}

// ---- send side -------------------------------------------------------------

absl::Status TcpSendComm::Isend(void* data, size_t size, int tag, void** request) {
  *request = nullptr;
  TRIRACE_RETURN_IF_ERROR(failure());
  if ((++calls_ & 15) == 0) TRIRACE_RETURN_IF_ERROR(CheckBackChannel());
  TcpRequest* req = AllocRequest(TcpRequest::Kind::kSend);
  if (req == nullptr) return absl::OkStatus();  // all requests busy: retry later
  req->n = 1;
  req->subs[0] = {static_cast<char*>(data), size, tag, size, true};
  int ndata = workers_.num_sockets();
  uint32_t nparts = 0;
  if (ndata > 0 && size >= options_.stripe_min_bytes) {
    nparts = static_cast<uint32_t>(std::clamp<uint64_t>(size / kMinPartBytes, 1, ndata));
  }
  FrameHeader header{kFrameMagic, tag, size, nparts, 0, {}};
  req->inline_left = 1;
  if (nparts > 0) {
    req->parts_left.store(static_cast<int>(nparts), std::memory_order_relaxed);
    for (uint32_t k = 0; k < nparts; ++k) {
      uint64_t offset, len;
      PartRange(size, nparts, k, &offset, &len);
      absl::Status st = workers_.Enqueue(
          static_cast<int>(k), PartTask{static_cast<char*>(data) + offset, len, &req->parts_left});
      if (!st.ok()) {
        Fail(st);
        return st;
      }
    }
    outgoing_.push_back({req, header, nullptr, sizeof(FrameHeader)});
  } else if (size <= kEmbeddedBytes) {
    if (size > 0) std::memcpy(header.embedded, data, size);
    outgoing_.push_back({req, header, nullptr, sizeof(FrameHeader)});
  } else {
    outgoing_.push_back({req, header, static_cast<const char*>(data), sizeof(FrameHeader) + size});
  }
  *request = req;
  absl::Status st = FlushControl();
  if (!st.ok()) Fail(st);
  return st;
}

bool TcpSendComm::Done(const TcpRequest& req) const {
  return req.inline_left == 0 && req.parts_left.load(std::memory_order_acquire) == 0;
}

absl::Status TcpSendComm::FlushControl() {
  while (!outgoing_.empty()) {
    Outgoing& o = outgoing_.front();
    iovec iov[2];
    int niov = 0;
    uint64_t hdr = sizeof(FrameHeader);
    if (o.sent < hdr) {
      iov[niov++] = {reinterpret_cast<char*>(&o.header) + o.sent, hdr - o.sent};
      if (o.total > hdr) iov[niov++] = {const_cast<char*>(o.payload), o.total - hdr};
    } else {
      iov[niov++] = {const_cast<char*>(o.payload) + (o.sent - hdr), o.total - o.sent};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = niov;
    ssize_t r = ::sendmsg(control_fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      o.sent += static_cast<uint64_t>(r);
      blocked_since_ns_ = 0;
      if (o.sent == o.total) {
        o.req->inline_left = 0;
        outgoing_.pop_front();
      }
      continue;
    }
    if (r < 0 && WouldBlock(errno)) {
      // A full socket is a receiver that does not read yet; it fails only
      // once the receiver's host stops answering (peer_liveness.h).
      if (blocked_since_ns_ == 0) blocked_since_ns_ = MonotonicNs();
      if (StalledTooLong(blocked_since_ns_)) return PeerAnswers(control_fd(), options_.timeout_ms, "control socket");
      return absl::OkStatus();
    }
    return ControlSocketError("send", r < 0 ? errno : EPIPE);
  }
  return absl::OkStatus();
}

absl::Status TcpSendComm::CheckBackChannel() {
  RejectFrame frame{};
  ssize_t r = ::recv(control_fd(), &frame, sizeof(frame), MSG_DONTWAIT | MSG_PEEK);
  if (r < 0 && WouldBlock(errno)) return absl::OkStatus();
  if (r == static_cast<ssize_t>(sizeof(frame)) && frame.magic == kRejectMagic) {
    Fail(absl::FailedPreconditionError(absl::StrCat(
        "the receiver rejected the message with tag ", frame.tag, ": ", frame.message_size,
        " bytes do not fit its posted receive of ", frame.posted_size, " bytes")));
  } else if (r > 0 && r < static_cast<ssize_t>(sizeof(frame))) {
    return absl::OkStatus();  // rest of the frame still in flight
  } else if (r == 0) {
    Fail(RemoteError("the receiver closed the connection"));
  } else if (r < 0) {
    Fail(ControlSocketError("recv", errno));
  } else {
    Fail(InternalError(absl::StrCat("unexpected bytes from the receiver (magic 0x",
                                    absl::Hex(frame.magic), ")")));
  }
  return failure();
}

namespace {

// Reads and drops whatever the peer sent; true once it closed or failed.
bool PeerGone(int fd) {
  char sink[4096];
  while (true) {
    ssize_t r = ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
    if (r > 0) continue;
    if (r == 0) return true;
    return !WouldBlock(errno);
  }
}

}  // namespace

void TcpSendComm::FinishSending() {
  if (!failure().ok() || AnyOutstanding()) return;
  const int64_t deadline_ns = MonotonicNs() + int64_t{options_.timeout_ms} * 1000000;
  std::vector<pollfd> waiting;
  for (const UniqueFd& s : sockets_) {
    if (::shutdown(s.get(), SHUT_WR) == 0) waiting.push_back({s.get(), POLLIN, 0});
  }
  int unacked = 0;
  while (true) {
    for (size_t i = 0; i < waiting.size();) {
      // SIOCOUTQ: bytes (and the FIN) not yet acknowledged by the peer.
      bool done = PeerGone(waiting[i].fd) || ioctl(waiting[i].fd, SIOCOUTQ, &unacked) != 0 ||
                  unacked == 0;
      if (done) {
        waiting[i] = waiting.back();
        waiting.pop_back();
      } else {
        ++i;
      }
    }
    if (waiting.empty()) return;
    int64_t left_ms = (deadline_ns - MonotonicNs()) / 1000000;
    if (left_ms <= 0) break;
    (void)::poll(waiting.data(), waiting.size(), static_cast<int>(std::min<int64_t>(left_ms, kLingerPollMs)));
  }
  TRIRACE_WARN(NET, "closeSend: the receiver did not acknowledge all bytes on %d socket(s) within %d ms "
               "(TRIRACE_NET_TIMEOUT_MS); closing anyway, they may be lost",
               static_cast<int>(waiting.size()), options_.timeout_ms);
}

absl::Status TcpSendComm::Progress() {
  TRIRACE_RETURN_IF_ERROR(failure());
  absl::Status st = FlushControl();
  if (!st.ok()) {
    Fail(st);
    return st;
  }
  // The back channel only carries a reject or the receiver's close: look
  // every 16th call (as Isend does), not on every poll of a pending send.
  if ((++calls_ & 15) == 0) return CheckBackChannel();
  return absl::OkStatus();
}

// ---- receive side ----------------------------------------------------------

absl::Status TcpRecvComm::Irecv(int n, void** data, size_t* sizes, int* tags, void** request) {
  *request = nullptr;
  TRIRACE_RETURN_IF_ERROR(failure());
  TcpRequest* req = AllocRequest(TcpRequest::Kind::kRecv);
  if (req == nullptr) return absl::OkStatus();
  req->n = n;
  req->unmatched = n;
  for (int i = 0; i < n; ++i) req->subs[i] = {static_cast<char*>(data[i]), sizes[i], tags[i], 0, false};
  posted_.push_back(req);
  *request = req;  // test() moves the bytes
  return absl::OkStatus();
}

bool TcpRecvComm::Done(const TcpRequest& req) const {
  return req.unmatched == 0 && req.inline_left == 0 &&
         req.parts_left.load(std::memory_order_acquire) == 0;
}

absl::Status TcpRecvComm::Lost(const TcpRequest& req) const {
  // Frame headers are read in order and the EOF comes after the last one,
  // so a buffer still unmatched then never gets a message (Progress has
  // offered it the one waiting at the head, if any). Matched buffers (parts
  // still arriving on the data sockets) go on.
  if (sender_closed_ && req.unmatched > 0) {
    if (state_ == State::kHeader && header_read_ == sizeof(FrameHeader)) {
      return RemoteError(absl::StrCat("the sender closed the connection; its next message (tag ", header_.tag,
                                      ") has waited ", options_.timeout_ms, " ms (TRIRACE_NET_TIMEOUT_MS) for a "
                                      "receive, and nothing behind it can reach this receive (tag ",
                                      req.subs[0].tag, ")"));
    }
    return RemoteError(absl::StrCat("the sender closed the connection before sending the message for ",
                                    req.unmatched, " posted receive buffer(s) (tag ", req.subs[0].tag, ")"));
  }
  return absl::OkStatus();
}

absl::Status TcpRecvComm::Progress() {
  TRIRACE_RETURN_IF_ERROR(failure());
  absl::Status st;
  while (st.ok()) {
    bool complete = false;
    if (state_ == State::kHeader) {
      if (header_read_ < sizeof(FrameHeader)) {
        st = ReadHeader(&complete);
        if (!st.ok() || !complete) break;
      }
      st = Dispatch(&complete);
      if (!complete) {
        if (st.ok() && !sender_closed_) st = PeekForClose();
        break;
      }
    } else {
      st = ReadPayload(&complete);
      if (!complete) break;
      state_ = State::kHeader;
    }
  }
  if (!st.ok()) Fail(st);
  return failure();
}

absl::Status TcpRecvComm::PeekForClose() {
  // The head message waits for its receive, and nothing behind it is read
  // until that receive is posted. If the sender has closed (POLLRDHUP: even
  // with bytes still queued behind the head) and the head has waited longer
  // than the timeout, no receive is coming for it: fail the receives that
  // wait (Lost) rather than leave them waiting for ever. Found by
  // tests/fuzz/plugin_wire_fuzz: a message for another tag, then EOF.
  if (head_waits_since_ns_ == 0) head_waits_since_ns_ = MonotonicNs();
  if (!StalledTooLong(head_waits_since_ns_)) return absl::OkStatus();
  pollfd p{control_fd(), POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) sender_closed_ = true;
  return absl::OkStatus();
}

absl::Status TcpRecvComm::ReadHeader(bool* complete) {
  ssize_t r = ::recv(control_fd(), reinterpret_cast<char*>(&header_) + header_read_,
                     sizeof(FrameHeader) - header_read_, MSG_DONTWAIT);
  if (r > 0) {
    header_read_ += static_cast<uint64_t>(r);
    partial_since_ns_ = header_read_ < sizeof(FrameHeader) ? MonotonicNs() : 0;
    idle_since_ns_ = 0;
  } else if (r == 0) {
    // Messages whose header arrived before the close still complete; a
    // receive still waiting for a message fails in Test (Lost).
    if (header_read_ > 0) return RemoteError("the sender closed the connection mid frame header");
    sender_closed_ = true;
    return absl::OkStatus();
  } else if (WouldBlock(errno)) {
    if (StalledTooLong(partial_since_ns_)) return PeerAnswers(control_fd(), options_.timeout_ms, "control socket");
    // Receives wait and nothing comes: a sender still computing, or a host
    // that is gone. Ask the kernel (at most every kLivenessCheckMs).
    if (header_read_ == 0 && !posted_.empty()) {
      const int64_t now = MonotonicNs();
      if (idle_since_ns_ == 0) idle_since_ns_ = now;
      if (StalledTooLong(idle_since_ns_) && now - last_liveness_check_ns_ > kLivenessCheckMs * 1000000) {
        last_liveness_check_ns_ = now;
        return PeerAnswers(control_fd(), options_.timeout_ms, "control socket");
      }
    } else {
      idle_since_ns_ = 0;
    }
    return absl::OkStatus();
  } else {
    return ControlSocketError("recv", errno);
  }
  if (header_read_ < sizeof(FrameHeader)) return absl::OkStatus();
  if (header_.magic != kFrameMagic) {
    return InternalError(absl::StrCat("corrupt frame header on the control socket (magic 0x",
                                      absl::Hex(header_.magic), ")"));
  }
  if (header_.nparts > static_cast<uint32_t>(workers_.num_sockets())) {
    return InternalError(absl::StrCat("frame header asks for ", header_.nparts,
                                      " parts; this comm has ", workers_.num_sockets(),
                                      " data sockets"));
  }
  *complete = true;
  return absl::OkStatus();
}

void TcpRecvComm::Reject(const TcpRequest::Sub& sub) {
  RejectFrame frame{kRejectMagic, header_.tag, header_.size, sub.capacity};
  (void)::send(control_fd(), &frame, sizeof(frame), MSG_NOSIGNAL | MSG_DONTWAIT);
}

absl::Status TcpRecvComm::Dispatch(bool* dispatched) {
  *dispatched = false;
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    TcpRequest* req = *it;
    for (int i = 0; i < req->n; ++i) {
      TcpRequest::Sub& sub = req->subs[i];
      if (sub.matched || sub.tag != header_.tag) continue;
      if (header_.size > sub.capacity) {
        Reject(sub);
        return absl::FailedPreconditionError(absl::StrCat(
            "message with tag ", header_.tag, " is ", header_.size,
            " bytes, larger than the posted receive buffer of ", sub.capacity, " bytes"));
      }
      sub.matched = true;
      sub.size = header_.size;
      if (--req->unmatched == 0) posted_.erase(it);
      header_read_ = 0;
      head_waits_since_ns_ = 0;
      *dispatched = true;
      if (header_.nparts == 0 && header_.size <= kEmbeddedBytes) {
        if (header_.size > 0) std::memcpy(sub.data, header_.embedded, header_.size);
        return absl::OkStatus();
      }
      if (header_.nparts == 0) {
        if (header_.size > 0) {
          state_ = State::kPayload;
          payload_req_ = req;
          payload_sub_ = &sub;
          payload_read_ = 0;
          req->inline_left++;
        }
        return absl::OkStatus();
      }
      req->parts_left.fetch_add(static_cast<int>(header_.nparts), std::memory_order_relaxed);
      for (uint32_t k = 0; k < header_.nparts; ++k) {
        uint64_t offset, len;
        PartRange(header_.size, header_.nparts, k, &offset, &len);
        TRIRACE_RETURN_IF_ERROR(workers_.Enqueue(
            static_cast<int>(k), PartTask{sub.data + offset, len, &req->parts_left}));
      }
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();  // no receive posted for this message yet
}

absl::Status TcpRecvComm::ReadPayload(bool* complete) {
  uint64_t want = payload_sub_->size - payload_read_;
  ssize_t r = ::recv(control_fd(), payload_sub_->data + payload_read_, want, MSG_DONTWAIT);
  if (r > 0) {
    payload_read_ += static_cast<uint64_t>(r);
    partial_since_ns_ = MonotonicNs();
    if (payload_read_ == payload_sub_->size) {
      payload_req_->inline_left--;
      partial_since_ns_ = 0;
      *complete = true;
    }
    return absl::OkStatus();
  }
  if (r == 0) return RemoteError("the sender closed the connection mid-message");
  if (!WouldBlock(errno)) return ControlSocketError("recv", errno);
  if (partial_since_ns_ == 0) partial_since_ns_ = MonotonicNs();
  if (StalledTooLong(partial_since_ns_)) return PeerAnswers(control_fd(), options_.timeout_ms, "control socket");
  return absl::OkStatus();
}

}  // namespace trirace::net::tcp
