#include "hostccl/src/net_peer_links.h"

#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"

namespace trirace::hostccl {

// Registrations are made per link on first use and released with the region.
class NetPeerLinks::NetRegion final : public MemRegion {
 public:
  NetRegion(NetPeerLinks* t, char* base, size_t size)
      : MemRegion(base, size), t_(t), base_(base), size_(size),
        send_mh_(t->nranks_, nullptr), recv_mh_(t->nranks_, nullptr) {}
  ~NetRegion() override {
    if (t_->closed_) return;  // the plugin released them with the comms
    for (int p = 0; p < t_->nranks_; ++p) {
      if (send_mh_[p] != nullptr) t_->plugin_->DeregMr(t_->send_[p], send_mh_[p]);
      if (recv_mh_[p] != nullptr) t_->plugin_->DeregMr(t_->recv_[p], recv_mh_[p]);
    }
  }
  absl::StatusOr<void*> SendHandle(int peer) { return Get(t_->send_[peer], send_mh_[peer]); }
  absl::StatusOr<void*> RecvHandle(int peer) { return Get(t_->recv_[peer], recv_mh_[peer]); }

 private:
  absl::StatusOr<void*> Get(void* comm, void*& slot) {
    if (slot == nullptr) TRIRACE_RETURN_IF_ERROR(t_->plugin_->RegMr(comm, base_, size_, &slot));
    return slot;
  }
  NetPeerLinks* t_;
  char* base_;
  size_t size_;
  std::vector<void*> send_mh_;
  std::vector<void*> recv_mh_;
};

NetPeerLinks::NetPeerLinks(NetPlugin* plugin, int rank, int nranks, int traffic_class)
    : plugin_(plugin), rank_(rank), nranks_(nranks), traffic_class_(traffic_class),
      max_message_bytes_(plugin->device().max_message_bytes), listen_(nranks, nullptr),
      send_(nranks, nullptr), recv_(nranks, nullptr) {}

NetPeerLinks::~NetPeerLinks() { Close(); }

absl::StatusOr<std::unique_ptr<NetPeerLinks>> NetPeerLinks::Create(NetPlugin* plugin, int rank, int nranks,
                                                                   uint64_t comm_id, int traffic_class) {
  std::unique_ptr<NetPeerLinks> t(new NetPeerLinks(plugin, rank, nranks, traffic_class));
  absl::StatusOr<void*> ctx = plugin->InitContext(comm_id, traffic_class);
  if (!ctx.ok()) return ctx.status();
  t->ctx_ = *ctx;
  t->handles_.assign(static_cast<size_t>(nranks) * NCCL_NET_HANDLE_MAXSIZE, '\0');
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    TRIRACE_RETURN_IF_ERROR(
        plugin->Listen(t->ctx_, &t->handles_[static_cast<size_t>(p) * NCCL_NET_HANDLE_MAXSIZE], &t->listen_[p]));
  }
  return t;
}

absl::Status NetPeerLinks::ConnectAll(const std::vector<std::string>& blobs, int64_t deadline_ns,
                                      const std::atomic<bool>& abort) {
  int pending = 2 * (nranks_ - 1);
  int idle = 0;
  while (pending > 0) {
    bool progress = false;
    for (int p = 0; p < nranks_; ++p) {
      if (p == rank_) continue;
      if (send_[p] == nullptr) {
        // Our handle inside peer p's blob is entry `rank_`.
        std::string handle = blobs[p].substr(static_cast<size_t>(rank_) * NCCL_NET_HANDLE_MAXSIZE,
                                             NCCL_NET_HANDLE_MAXSIZE);
        absl::Status s = plugin_->Connect(ctx_, traffic_class_, handle.data(), &send_[p]);
        if (!s.ok()) return absl::Status(s.code(), absl::StrFormat("connecting rank %d to rank %d: %s", rank_, p, s.message()));
        if (send_[p] != nullptr) --pending, progress = true;
      }
      if (recv_[p] == nullptr) {
        absl::Status s = plugin_->Accept(listen_[p], &recv_[p]);
        if (!s.ok()) return absl::Status(s.code(), absl::StrFormat("rank %d accepting rank %d: %s", rank_, p, s.message()));
        if (recv_[p] != nullptr) --pending, progress = true;
      }
    }
    if (pending == 0) break;
    if (abort.load(std::memory_order_acquire)) return absl::AbortedError("communicator aborted during set-up");
    if (MonotonicNs() > deadline_ns) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "rank %d: %d of %d net connections still not up at the deadline "
          "(TRIRACE_HOSTCCL_BOOTSTRAP_TIMEOUT_MS)", rank_, pending, 2 * (nranks_ - 1)));
    }
    if (!progress) {
      if (++idle > 100) std::this_thread::sleep_for(std::chrono::microseconds(200));
      else std::this_thread::yield();
    }
  }
  for (int p = 0; p < nranks_; ++p) {
    if (listen_[p] != nullptr) plugin_->CloseListen(listen_[p]);
    listen_[p] = nullptr;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MemRegion>> NetPeerLinks::Register(void* base, size_t size) {
  return std::unique_ptr<MemRegion>(new NetRegion(this, static_cast<char*>(base), size));
}

absl::StatusOr<void*> NetPeerLinks::Isend(int peer, const void* data, size_t size, MemRegion& region) {
  if (closed_) return absl::AbortedError("peer links closed");
  absl::StatusOr<void*> mh = static_cast<NetRegion&>(region).SendHandle(peer);
  if (!mh.ok()) return mh.status();
  void* request = nullptr;
  TRIRACE_RETURN_IF_ERROR(plugin_->Isend(send_[peer], const_cast<void*>(data), size, rank_, *mh, &request));
  return request;
}

absl::StatusOr<void*> NetPeerLinks::Irecv(int peer, void* data, size_t size, MemRegion& region) {
  if (closed_) return absl::AbortedError("peer links closed");
  absl::StatusOr<void*> mh = static_cast<NetRegion&>(region).RecvHandle(peer);
  if (!mh.ok()) return mh.status();
  void* request = nullptr;
  TRIRACE_RETURN_IF_ERROR(plugin_->Irecv(recv_[peer], data, size, peer, *mh, &request));
  return request;
}

absl::StatusOr<bool> NetPeerLinks::Test(void* request, size_t* size) {
  bool done = false;
  TRIRACE_RETURN_IF_ERROR(plugin_->Test(request, &done, size));
  return done;
}

void NetPeerLinks::SetTransferFunc(NcclFunc f) {
  // NCCL's internal ncclFunc numbering (net_abi.h TRIRACE_NCCL_FUNC_*).
  int func = TRIRACE_NCCL_FUNC_SENDRECV;
  switch (f) {
    case NcclFunc::kBcast:
    case NcclFunc::kBroadcast: func = TRIRACE_NCCL_FUNC_BROADCAST; break;
    case NcclFunc::kReduce: func = TRIRACE_NCCL_FUNC_REDUCE; break;
    case NcclFunc::kAllGather: func = TRIRACE_NCCL_FUNC_ALLGATHER; break;
    case NcclFunc::kReduceScatter: func = TRIRACE_NCCL_FUNC_REDUCESCATTER; break;
    case NcclFunc::kAllReduce: func = TRIRACE_NCCL_FUNC_ALLREDUCE; break;
    case NcclFunc::kSend:
    case NcclFunc::kRecv: func = TRIRACE_NCCL_FUNC_SENDRECV; break;
    case NcclFunc::kAlltoAll: func = TRIRACE_NCCL_FUNC_ALLTOALL; break;
    case NcclFunc::kScatter: func = TRIRACE_NCCL_FUNC_SCATTER; break;
    case NcclFunc::kGather: func = TRIRACE_NCCL_FUNC_GATHER; break;
  }
  if (func == last_kind_) return;
  last_kind_ = func;
  plugin_->SetTransferFunc(ctx_, func);
}

void NetPeerLinks::Close() {
  if (closed_) return;
  closed_ = true;
  for (int p = 0; p < nranks_; ++p) {
    if (send_[p] != nullptr) plugin_->CloseSend(send_[p]);
    if (recv_[p] != nullptr) plugin_->CloseRecv(recv_[p]);
    if (listen_[p] != nullptr) plugin_->CloseListen(listen_[p]);
    send_[p] = recv_[p] = listen_[p] = nullptr;
  }
  plugin_->FinalizeContext(ctx_);
  ctx_ = nullptr;
}

}  // namespace trirace::hostccl
