#include "hostccl/src/bootstrap.h"

#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/logging.h"
#include "common/params.h"
#include "common/status.h"
#include "hostccl/src/socket.h"

namespace trirace::hostccl {
namespace {

constexpr uint32_t kIdMagic = 0x4843434c;     // "HCCL"
constexpr uint32_t kWireMagic = 0x48434257;   // "HCBW"

// The layout inside ncclUniqueId::internal.
struct IdLayout {
  uint32_t magic;
  uint32_t addr_len;
  uint64_t nonce;
  sockaddr_in6 addr;  // large enough for sockaddr_in too
};
static_assert(sizeof(IdLayout) <= NCCL_UNIQUE_ID_BYTES);

struct Hello {
  uint32_t magic;
  uint32_t rank;
  uint32_t nranks;
  uint32_t payload_size;
  uint64_t nonce;
};

enum ReplyStatus : int32_t { kOk = 0, kTimedOut = 1, kRejected = 2 };
struct Reply {
  uint32_t magic;
  int32_t status;
  uint32_t arrived;
  uint32_t payload_size;  // per rank when kOk; message length otherwise
};

int64_t TimeoutNs() { return ParamInt(ParamId::kHostcclBootstrapTimeoutMs) * 1000000; }

void SendReply(const Socket& s, int32_t status, uint32_t arrived, const std::string& body, uint32_t unit) {
  Reply r{kWireMagic, status, arrived, unit};
  int64_t deadline = MonotonicNs() + 5'000'000'000;
  if (SendAll(s, &r, sizeof(r), deadline).ok()) (void)SendAll(s, body.data(), body.size(), deadline);
}

// One rendezvous: accepts ranks until all arrived or the deadline passed.
class RootServer {
 public:
  RootServer(Socket listener, uint64_t nonce) : listener_(std::move(listener)), nonce_(nonce) {
    thread_ = std::thread([this] { Run(); });
  }
  ~RootServer() {
    stop_.store(true);
    thread_.join();
  }
  bool finished() const { return finished_.load(); }

 private:
  struct Member {
    Socket socket;
    std::string payload;
    bool present = false;
  };

  void Run() {
    int64_t deadline = INT64_MAX;
    uint32_t nranks = 0;
    uint32_t payload_size = 0;
    uint32_t arrived = 0;
    std::vector<Member> members;
    while (!stop_.load()) {
      if (nranks != 0 && arrived == nranks) break;
      if (MonotonicNs() > deadline) break;
      absl::StatusOr<Socket> conn = AcceptFor(listener_, 200);
      if (!conn.ok() || !conn->valid()) continue;
      Hello h{};
      if (!RecvAll(*conn, &h, sizeof(h), MonotonicNs() + 5'000'000'000).ok()) continue;
      std::string why;
      if (h.magic != kWireMagic || h.nonce != nonce_) {
        why = "the ncclUniqueId does not belong to this rendezvous (stale or corrupt id)";
      } else if (h.nranks == 0 || h.rank >= h.nranks) {
        why = absl::StrFormat("rank %u is out of range for nranks %u", h.rank, h.nranks);
      } else if (nranks != 0 && h.nranks != nranks) {
        why = absl::StrFormat("nranks %u differs from the %u given by the first rank", h.nranks, nranks);
      } else if (nranks != 0 && h.payload_size != payload_size) {
        why = "payload size differs between ranks (mismatched hostccl builds?)";
      } else if (nranks != 0 && members[h.rank].present) {
        why = absl::StrFormat("rank %u joined twice", h.rank);
      }
      std::string payload(h.magic == kWireMagic ? h.payload_size : 0, '\0');
      if (why.empty() && !RecvAll(*conn, payload.data(), payload.size(), MonotonicNs() + 5'000'000'000).ok()) {
        continue;
      }
      if (!why.empty()) {
        SendReply(*conn, kRejected, arrived, why, static_cast<uint32_t>(why.size()));
        continue;
      }
      if (nranks == 0) {
        nranks = h.nranks;
        payload_size = h.payload_size;
        members.resize(nranks);
        deadline = MonotonicNs() + TimeoutNs();
      }
      members[h.rank] = Member{std::move(*conn), std::move(payload), true};
      ++arrived;
    }
    if (nranks != 0 && arrived == nranks) {
      std::string all;
      all.reserve(static_cast<size_t>(nranks) * payload_size);
      for (const Member& m : members) all += m.payload;
      for (const Member& m : members) SendReply(m.socket, kOk, arrived, all, payload_size);
    } else if (nranks != 0) {
      std::vector<int> missing;
      for (uint32_t r = 0; r < nranks; ++r) {
        if (!members[r].present) missing.push_back(static_cast<int>(r));
      }
      std::string why = absl::StrFormat(
          "rendezvous timed out after %d ms: %u of %u ranks arrived; missing ranks: %s "
          "(TRIRACE_HOSTCCL_BOOTSTRAP_TIMEOUT_MS)",
          ParamInt(ParamId::kHostcclBootstrapTimeoutMs), arrived, nranks, absl::StrJoin(missing, ","));
      TRIRACE_WARN(INIT, "hostccl bootstrap: %s", why);
      for (const Member& m : members) {
        if (m.present) SendReply(m.socket, kTimedOut, arrived, why, static_cast<uint32_t>(why.size()));
      }
    }
    finished_.store(true);
  }

  Socket listener_;
  uint64_t nonce_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

// Live roots of this process. Deliberately never destroyed: a root waiting
// for ranks at exit must not hold up the process.
class RootRegistry {
 public:
  static RootRegistry& Get() {
    static auto* registry = new RootRegistry();
    return *registry;
  }
  void Add(std::unique_ptr<RootServer> root) {
    absl::MutexLock lock(&mu_);
    roots_.erase(std::remove_if(roots_.begin(), roots_.end(),
                                [](const std::unique_ptr<RootServer>& r) { return r->finished(); }),
                 roots_.end());
    roots_.push_back(std::move(root));
  }

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<RootServer>> roots_ ABSL_GUARDED_BY(mu_);
};

uint64_t RandomNonce() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(MonotonicNs());
}

absl::StatusOr<SockAddr> DecodeId(const ncclUniqueId& id, uint64_t* nonce) {
  IdLayout layout;
  std::memcpy(&layout, id.internal, sizeof(layout));
  if (layout.magic != kIdMagic || layout.addr_len == 0 || layout.addr_len > sizeof(layout.addr)) {
    return absl::InvalidArgumentError(
        "commId is not a hostccl ncclUniqueId (create it with ncclGetUniqueId of this library and "
        "pass the same bytes to every rank)");
  }
  SockAddr addr;
  addr.len = layout.addr_len;
  std::memcpy(&addr.storage, &layout.addr, layout.addr_len);
  *nonce = layout.nonce;
  return addr;
}

}  // namespace

absl::Status CreateUniqueId(ncclUniqueId* id) {
  absl::StatusOr<SockAddr> where = BootstrapAddress();
  if (!where.ok()) return where.status();
  SockAddr bound;
  absl::StatusOr<Socket> listener = ListenOn(*where, &bound);
  if (!listener.ok()) return listener.status();
  IdLayout layout{};
  layout.magic = kIdMagic;
  layout.addr_len = bound.len;
  layout.nonce = RandomNonce();
  std::memcpy(&layout.addr, &bound.storage, bound.len);
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, &layout, sizeof(layout));
  TRIRACE_INFO(INIT, "hostccl bootstrap: rendezvous at %s", bound.ToString());
  RootRegistry::Get().Add(std::make_unique<RootServer>(std::move(*listener), layout.nonce));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Rendezvous(const ncclUniqueId& id, int rank, int nranks,
                                                    const std::string& payload,
                                                    const std::atomic<bool>* abort) {
  uint64_t nonce = 0;
  absl::StatusOr<SockAddr> root = DecodeId(id, &nonce);
  if (!root.ok()) return root.status();
  int64_t deadline = MonotonicNs() + TimeoutNs();
  absl::StatusOr<Socket> s = ConnectTo(*root, deadline);
  if (!s.ok()) return s.status();
  Hello h{kWireMagic, static_cast<uint32_t>(rank), static_cast<uint32_t>(nranks),
          static_cast<uint32_t>(payload.size()), nonce};
  TRIRACE_RETURN_IF_ERROR(SendAll(*s, &h, sizeof(h), deadline));
  TRIRACE_RETURN_IF_ERROR(SendAll(*s, payload.data(), payload.size(), deadline));
  // The root answers when the last rank arrives, or at its own deadline
  // (which started with the first rank): allow a little more than that.
  int64_t reply_deadline = deadline + 5'000'000'000;
  for (;;) {
    if (abort != nullptr && abort->load()) return absl::AbortedError("communicator aborted during bootstrap");
    pollfd pfd{s->fd(), POLLIN, 0};
    if (poll(&pfd, 1, 100) > 0) break;
    if (MonotonicNs() > reply_deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "hostccl bootstrap: rank %d of %d got no answer from the rendezvous at %s within %d ms "
          "(TRIRACE_HOSTCCL_BOOTSTRAP_TIMEOUT_MS)",
          rank, nranks, root->ToString(), ParamInt(ParamId::kHostcclBootstrapTimeoutMs)));
    }
  }
  Reply r{};
  absl::Status got = RecvAll(*s, &r, sizeof(r), reply_deadline);
  if (!got.ok() || r.magic != kWireMagic) {
    return RemoteError(absl::StrFormat("hostccl bootstrap: the rendezvous at %s closed without an answer",
                                       root->ToString()));
  }
  if (r.status != kOk) {
    std::string why(std::min<uint32_t>(r.payload_size, 4096), '\0');
    (void)RecvAll(*s, why.data(), why.size(), reply_deadline);
    std::string msg = absl::StrFormat("hostccl bootstrap (rank %d of %d): %s", rank, nranks, why);
    if (r.status == kTimedOut) return absl::DeadlineExceededError(msg);
    return absl::InvalidArgumentError(msg);
  }
  std::vector<std::string> all(nranks, std::string(r.payload_size, '\0'));
  for (int p = 0; p < nranks; ++p) TRIRACE_RETURN_IF_ERROR(RecvAll(*s, all[p].data(), all[p].size(), reply_deadline));
  return all;
}

uint64_t UniqueIdHash(const ncclUniqueId& id) {
  return Fnv1a64(id.internal, sizeof(id.internal));
}

}  // namespace trirace::hostccl
