#include "hostccl/src/shm_peer_links.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/logging.h"
#include "common/params.h"
#include "common/process_info.h"
#include "common/status.h"
#include "hostccl/src/data_mover.h"

namespace trirace::hostccl {
namespace {

// Requests queued per ring before Isend/Irecv say "busy".
constexpr size_t kMaxQueued = 64;
// How often a stalled transfer looks whether its peer still runs.
constexpr int64_t kAliveCheckNs = 100 * 1000 * 1000;

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string LinkTarget(const char* path) {
  char buf[256];
  ssize_t n = readlink(path, buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// False once `pid` has exited (gone, or a zombie its parent has not reaped).
bool ProcessRuns(int pid) {
  std::ifstream in(absl::StrFormat("/proc/%d/stat", pid));
  if (!in) return false;
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;  // unreadable: assume alive
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

// Sends out[p] to and receives in[p] from every p in `peers` over `links`
// (one word each way per peer, as RunP2p moves an operation's bytes).
absl::Status ExchangeWords(PeerLinks& links, int rank, const std::vector<int>& peers, std::vector<uint64_t>& out,
                           std::vector<uint64_t>& in, int64_t deadline_ns, const std::atomic<bool>& abort) {
  std::vector<P2pTransfer> transfers;
  for (int p : peers) {
    transfers.push_back({p, true, reinterpret_cast<char*>(&out[p]), sizeof(uint64_t)});
    transfers.push_back({p, false, reinterpret_cast<char*>(&in[p]), sizeof(uint64_t)});
  }
  MoverEnv env;
  env.links = &links;
  env.abort = &abort;
  env.deadline_ns = deadline_ns;
  env.rank = rank;
  env.slot_bytes = sizeof(uint64_t);
  absl::Status st = RunP2p(transfers, env);
  if (st.ok()) return st;
  // Only the mover's own verdicts are renamed; an error of the links keeps its cause.
  if (absl::IsAborted(st) && abort.load(std::memory_order_acquire)) {
    return absl::AbortedError("communicator aborted during set-up");
  }
  if (absl::IsDeadlineExceeded(st) && MonotonicNs() > deadline_ns) {
    return absl::DeadlineExceededError(
        "shared-memory set-up did not finish before the deadline (TRIRACE_HOSTCCL_BOOTSTRAP_TIMEOUT_MS)");
  }
  // A short word cannot come from a peer running this code: not the user's counts.
  if (absl::IsInvalidArgument(st)) return InternalError(absl::StrCat("shared-memory set-up: ", st.message()));
  return absl::Status(st.code(), absl::StrCat("shared-memory set-up: ", st.message()));
}

}  // namespace

std::string HostIdentity::Encode() const {
  std::string out(kWireBytes, '\0');
  std::memcpy(&out[0], &host_key, sizeof(host_key));
  std::memcpy(&out[8], &pid, sizeof(pid));
  out[12] = shm ? 1 : 0;
  out[13] = receiver_ready ? 1 : 0;
  return out;
}

absl::StatusOr<HostIdentity> HostIdentity::Decode(const std::string& blob) {
  if (blob.size() < kWireBytes) {
    return InternalError(absl::StrFormat("bootstrap blob of %zu bytes has no host identity", blob.size()));
  }
  const char* p = blob.data() + blob.size() - kWireBytes;
  HostIdentity id;
  std::memcpy(&id.host_key, p, sizeof(id.host_key));
  std::memcpy(&id.pid, p + 8, sizeof(id.pid));
  id.shm = p[12] != 0;
  id.receiver_ready = p[13] != 0;
  return id;
}

HostIdentity LocalHostIdentity() {
  // The same /dev/shm file system (not the same mount namespace: `ip netns
  // exec` gives every process its own, over the same /dev/shm), and the same
  // PID namespace, where the peer's pid means the same process.
  struct stat shm {};
  stat("/dev/shm", &shm);
  std::string key = absl::StrCat(ParamString(ParamId::kHostId), "|", HostName(), "|",
                                 ReadFirstLine("/proc/sys/kernel/random/boot_id"), "|uid", getuid(), "|shm",
                                 shm.st_dev, ":", shm.st_ino);
  for (const char* ns : {"/proc/self/ns/pid", "/proc/self/ns/net"}) absl::StrAppend(&key, "|", LinkTarget(ns));
  HostIdentity id;
  id.host_key = Fnv1a64Text(key);
  id.pid = static_cast<int32_t>(getpid());
  id.shm = ParamBool(ParamId::kHostcclShm);
  id.receiver_ready = ParamBool(ParamId::kHostcclReceiverReady);
  return id;
}

ShmPeerLinks::ShmPeerLinks(std::unique_ptr<PeerLinks> inner, int rank, int nranks, std::vector<HostIdentity> ids)
    : inner_(std::move(inner)), rank_(rank), nranks_(nranks), ids_(std::move(ids)), send_(nranks), recv_(nranks),
      next_alive_check_ns_(nranks, 0) {}

ShmPeerLinks::~ShmPeerLinks() { Close(); }

absl::StatusOr<std::unique_ptr<ShmPeerLinks>> ShmPeerLinks::Create(std::unique_ptr<PeerLinks> inner, int rank,
                                                                   int nranks, uint64_t comm_hash,
                                                                   const std::vector<HostIdentity>& ids,
                                                                   int64_t deadline_ns,
                                                                   const std::atomic<bool>& abort) {
  if (static_cast<int>(ids.size()) != nranks || rank < 0 || rank >= nranks) {
    return InternalError(absl::StrFormat("shared-memory links: %zu identities for %d ranks", ids.size(), nranks));
  }
  std::unique_ptr<ShmPeerLinks> t(new ShmPeerLinks(std::move(inner), rank, nranks, ids));
  TRIRACE_RETURN_IF_ERROR(t->Handshake(comm_hash, deadline_ns, abort));
  return t;
}

absl::Status ShmPeerLinks::Handshake(uint64_t comm_hash, int64_t deadline_ns, const std::atomic<bool>& abort) {
  const HostIdentity& me = ids_[rank_];
  std::vector<int> peers;
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_ && me.shm && ids_[p].shm && ids_[p].host_key == me.host_key) peers.push_back(p);
  }
  if (peers.empty()) return absl::OkStatus();
  // Close() removes both names of every pair, whoever made them.
  for (int p : peers) {
    names_.push_back(ShmRing::Name(comm_hash, p, rank_));
    names_.push_back(ShmRing::Name(comm_hash, rank_, p));
  }
  const size_t slot_bytes = static_cast<size_t>(ParamInt(ParamId::kHostcclShmRingBytes)) / ShmRing::kSlots;

  // 1. Make the rings we receive on; tell each peer whether we could.
  std::vector<uint64_t> created(nranks_, 0), peer_created(nranks_, 0);
  std::string first_error;
  for (int p : peers) {
    absl::StatusOr<std::unique_ptr<ShmRing>> ring = ShmRing::Create(ShmRing::Name(comm_hash, p, rank_), slot_bytes);
    if (!ring.ok()) {
      if (first_error.empty()) first_error = std::string(ring.status().message());
      continue;
    }
    recv_[p].ring = std::move(*ring);
    created[p] = 1;
  }
  TRIRACE_RETURN_IF_ERROR(ExchangeWords(*inner_, rank_, peers, created, peer_created, deadline_ns, abort));

  // 2. Map the rings we send on; tell each peer whether we could.
  std::vector<uint64_t> opened(nranks_, 0), peer_opened(nranks_, 0);
  for (int p : peers) {
    if (peer_created[p] == 0) continue;
    absl::StatusOr<std::unique_ptr<ShmRing>> ring = ShmRing::Open(ShmRing::Name(comm_hash, rank_, p));
    if (!ring.ok()) {
      if (first_error.empty()) first_error = std::string(ring.status().message());
      continue;
    }
    send_[p].ring = std::move(*ring);
    opened[p] = 1;
  }
  TRIRACE_RETURN_IF_ERROR(ExchangeWords(*inner_, rank_, peers, opened, peer_opened, deadline_ns, abort));
  for (int p : peers) {
    if (peer_opened[p] == 0) recv_[p].ring.reset();
  }
  for (const std::string& name : names_) ShmRing::Unlink(name);  // both sides hold their rings now
  names_.clear();

  const int sends = shm_send_peers(), recvs = shm_recv_peers();
  if (sends < static_cast<int>(peers.size()) || recvs < static_cast<int>(peers.size())) {
    TRIRACE_WARN(INIT, "hostccl: rank %d: shared memory for %d sends and %d receives of %zu same-host peers, the "
                 "net plugin for the rest: %s", rank_, sends, recvs, peers.size(),
                 first_error.empty() ? "a peer could not set up its side" : first_error);
  } else {
    TRIRACE_INFO(INIT, "hostccl: rank %d: shared memory to %zu same-host peers (rings of %zu bytes)", rank_,
                 peers.size(), slot_bytes * ShmRing::kSlots);
  }
  return absl::OkStatus();
}

int ShmPeerLinks::shm_send_peers() const {
  return static_cast<int>(std::count_if(send_.begin(), send_.end(), [](const Lane& l) { return l.ring != nullptr; }));
}

int ShmPeerLinks::shm_recv_peers() const {
  return static_cast<int>(std::count_if(recv_.begin(), recv_.end(), [](const Lane& l) { return l.ring != nullptr; }));
}

absl::StatusOr<std::unique_ptr<MemRegion>> ShmPeerLinks::Register(void* base, size_t size) {
  return inner_->Register(base, size);
}

absl::StatusOr<void*> ShmPeerLinks::Isend(int peer, const void* data, size_t size, MemRegion& region) {
  if (closed_) return absl::AbortedError("peer links closed");
  if (send_[peer].ring == nullptr) return CountInner(inner_->Isend(peer, data, size, region));
  return Post(peer, true, const_cast<char*>(static_cast<const char*>(data)), size);
}

absl::StatusOr<void*> ShmPeerLinks::Irecv(int peer, void* data, size_t size, MemRegion& region) {
  if (closed_) return absl::AbortedError("peer links closed");
  if (recv_[peer].ring == nullptr) return CountInner(inner_->Irecv(peer, data, size, region));
  return Post(peer, false, static_cast<char*>(data), size);
}

absl::StatusOr<void*> ShmPeerLinks::Post(int peer, bool send, char* data, size_t size) {
  Lane& lane = send ? send_[peer] : recv_[peer];
  if (lane.queue.size() >= kMaxQueued) return nullptr;
  auto owned = std::make_unique<Request>(Request{peer, send, data, size});
  Request* r = owned.get();
  live_.emplace(r, std::move(owned));
  lane.queue.push_back(r);
  // Start copying now: the earlier the bytes move, the shorter the hop.
  TRIRACE_RETURN_IF_ERROR(Progress(lane, peer, send));
  r->waited = send && !r->done;
  return r;
}

void ShmPeerLinks::StartClock(std::optional<int64_t> start_ns) {
  clock_start_ns_ = start_ns;
  clock_end_ns_ = start_ns;
  clock_broken_ = false;
}

std::optional<int64_t> ShmPeerLinks::ClockEnd() {
  std::optional<int64_t> end = clock_broken_ ? std::nullopt : clock_end_ns_;
  StartClock(std::nullopt);
  return end;
}

int64_t ShmPeerLinks::MessageClockNs() const { return clock_start_ns_.value_or(MonotonicNs()); }

void ShmPeerLinks::ClockAtLeast(int64_t ns) {
  if (clock_end_ns_.has_value()) clock_end_ns_ = std::max(*clock_end_ns_, ns);
}

absl::Status ShmPeerLinks::Progress(Lane& lane, int peer, bool send) {
  for (Request* r : lane.queue) {
    if (r->done) continue;
    int64_t sender_clock_ns = 0;
    absl::StatusOr<bool> done =
        send ? lane.ring->Push(r->data, r->size, &r->offset, MessageClockNs())
             : lane.ring->Pop(r->data, r->size, &r->offset, &r->total, &sender_clock_ns, MessageClockNs());
    if (!done.ok()) {
      return absl::Status(done.status().code(),
                          absl::StrFormat("rank %d %s rank %d over shared memory: %s", rank_,
                                          send ? "sending to" : "receiving from", peer, done.status().message()));
    }
    if (!*done) break;
    r->done = true;
    // A receive ends once its data was sent; a send that waited for room,
    // once the receive that made room had started.
    if (!send) ClockAtLeast(sender_clock_ns);
    if (send && r->waited) ClockAtLeast(lane.ring->consumer_clock_ns());
  }
  return absl::OkStatus();
}

absl::Status ShmPeerLinks::CheckPeerAlive(int peer) {
  const int64_t now = MonotonicNs();
  if (now < next_alive_check_ns_[peer]) return absl::OkStatus();
  next_alive_check_ns_[peer] = now + kAliveCheckNs;
  if (ProcessRuns(ids_[peer].pid)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrFormat(
      "rank %d: rank %d (pid %d, on this host) exited with a shared-memory transfer unfinished", rank_, peer,
      ids_[peer].pid));
}

absl::StatusOr<bool> ShmPeerLinks::Test(void* request, size_t* size) {
  auto it = live_.find(static_cast<Request*>(request));
  if (it == live_.end()) {
    absl::StatusOr<bool> done = inner_->Test(request, size);
    if (done.ok() && *done) --inner_in_flight_;
    return done;
  }
  Request* r = it->second.get();
  Lane& lane = r->send ? send_[r->peer] : recv_[r->peer];
  if (!r->done) {
    if (closed_) return absl::AbortedError("peer links closed");
    TRIRACE_RETURN_IF_ERROR(Progress(lane, r->peer, r->send));
  }
  if (!r->done) {
    // Bytes move only when polled (no helper thread), so a caller waiting
    // on one transfer moves all the others too, as a net plugin's threads
    // would: two ranks each waiting on a receive still get their sends out.
    for (int p = 0; p < nranks_; ++p) {
      if (!send_[p].queue.empty()) TRIRACE_RETURN_IF_ERROR(Progress(send_[p], p, true));
      if (!recv_[p].queue.empty()) TRIRACE_RETURN_IF_ERROR(Progress(recv_[p], p, false));
    }
  }
  if (!r->done) {
    TRIRACE_RETURN_IF_ERROR(CheckPeerAlive(r->peer));
    return false;
  }
  if (size != nullptr) *size = r->send ? r->size : r->total;
  lane.queue.erase(std::find(lane.queue.begin(), lane.queue.end(), r));
  live_.erase(it);
  return true;
}

absl::StatusOr<void*> ShmPeerLinks::CountInner(absl::StatusOr<void*> request) {
  clock_broken_ = true;  // the network's time is real
  if (request.ok() && *request != nullptr) ++inner_in_flight_;
  return request;
}

void ShmPeerLinks::WaitForActivity(std::chrono::microseconds hint) {
  Lane* only = nullptr;
  bool one_ring = inner_in_flight_ == 0 && !closed_;
  for (int p = 0; p < nranks_ && one_ring; ++p) {
    if (!send_[p].queue.empty()) one_ring = false;
    if (recv_[p].queue.empty()) continue;
    if (only != nullptr) one_ring = false;
    only = &recv_[p];
  }
  // A receive already complete (moved while another transfer was polled)
  // is progress the caller has yet to see.
  if (one_ring && only != nullptr && !only->queue.front()->done) {
    only->ring->WaitForData(1'000'000);  // 1 ms: the caller still checks for abort
  } else {
    inner_->WaitForActivity(hint);
  }
}

void ShmPeerLinks::Close() {
  if (closed_) return;
  closed_ = true;
  for (std::vector<Lane>* lanes : {&send_, &recv_}) {
    for (Lane& lane : *lanes) {
      if (lane.ring != nullptr) lane.ring->Close();
      lane.ring.reset();
      lane.queue.clear();
    }
  }
  for (const std::string& name : names_) ShmRing::Unlink(name);
  names_.clear();
  live_.clear();
  inner_->Close();
}

}  // namespace trirace::hostccl
