// NetPeerLinks: a PeerLinks whose links are net plugin connections.
//
// Set-up is two-phase around the bootstrap exchange:
//   auto t = NetPeerLinks::Create(plugin, rank, nranks, comm_id, tc);
//   blob = t->ListenHandles();          // nranks handles, entry p for peer p
//   ... allgather every rank's blob ...
//   t->ConnectAll(blobs, deadline, abort);
// Every ordered pair of ranks gets one connection (a full mesh), so any
// collective or point-to-point pattern can run; tag = sender rank as NCCL
// uses it.
//
// Thread safety: see peer_links.h.
#ifndef TRIRACE_HOSTCCL_SRC_NET_PEER_LINKS_H_
#define TRIRACE_HOSTCCL_SRC_NET_PEER_LINKS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hostccl/src/net_plugin.h"
#include "hostccl/src/peer_links.h"

namespace trirace::hostccl {

class NetPeerLinks final : public PeerLinks {
 public:
  static absl::StatusOr<std::unique_ptr<NetPeerLinks>> Create(NetPlugin* plugin, int rank, int nranks,
                                                              uint64_t comm_id, int traffic_class);
  ~NetPeerLinks() override;

  // nranks * NCCL_NET_HANDLE_MAXSIZE bytes: entry p is the handle rank p
  // connects to (entry `rank` is unused).
  const std::string& ListenHandles() const { return handles_; }
  // Connects to and accepts from every peer; `blobs[p]` is rank p's
  // ListenHandles(). Fails past `deadline_ns` (MonotonicNs) or on abort.
  absl::Status ConnectAll(const std::vector<std::string>& blobs, int64_t deadline_ns,
                          const std::atomic<bool>& abort);

  absl::StatusOr<std::unique_ptr<MemRegion>> Register(void* base, size_t size) override;
  absl::StatusOr<void*> Isend(int peer, const void* data, size_t size, MemRegion& region) override;
  absl::StatusOr<void*> Irecv(int peer, void* data, size_t size, MemRegion& region) override;
  absl::StatusOr<bool> Test(void* request, size_t* size) override;
  size_t MaxMessageBytes() const override { return max_message_bytes_; }
  void SetTransferFunc(NcclFunc func) override;
  void Close() override;

 private:
  class NetRegion;
  NetPeerLinks(NetPlugin* plugin, int rank, int nranks, int traffic_class);

  NetPlugin* plugin_;
  int rank_;
  int nranks_;
  int traffic_class_;
  size_t max_message_bytes_;
  void* ctx_ = nullptr;
  std::string handles_;
  std::vector<void*> listen_;
  std::vector<void*> send_;
  std::vector<void*> recv_;
  int last_kind_ = -1;
  bool closed_ = false;
};

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_NET_PEER_LINKS_H_
