// ShmPeerLinks: a PeerLinks that carries the bytes between ranks on one host
// through shared memory (ShmRing, one per direction and pair) and hands every
// other peer to an inner PeerLinks (the net plugin). This is NCCL's choice of
// the SHM transport inside a node and the network between nodes.
//
// "One host" means one host key (LocalHostIdentity): the same TRIRACE_HOST_ID
// and host name (so the test bed's namespace hosts stay apart), the same
// kernel boot, the same /dev/shm file system, the same PID and network
// namespaces and the same uid. Both ranks of a pair must have
// TRIRACE_HOSTCCL_SHM on.
//
// Set-up, after the bootstrap exchange of identities and once the inner links
// are connected (the handshake runs over them):
//   1. each rank creates the ring it receives on from each same-host peer and
//      tells that peer its name (or that it failed);
//   2. each rank maps the rings it sends on and tells the peer whether it
//      could. A direction whose ring failed either step stays on the inner
//      links, with one warning; the names are gone once both sides mapped
//      them, and Close() removes any still there (a peer that died during
//      set-up).
//
// Data path: Isend/Irecv queue the transfer on the pair's ring and copy what
// fits at once; Test copies more, on every ring with queued transfers (there
// is no helper thread: the bytes move when the caller polls). A caller with
// nothing to do waits on the ring's doorbell instead of sleeping, so a
// waiting receive costs no CPU and wakes as soon as the data is there. Messages on a ring keep their order, a
// receive takes one whole message. A peer that closed its end (destroy,
// abort) or whose process is gone fails the transfer with Unavailable, as a
// closed connection does on the net path.
//
// Device clock (PeerLinks::StartClock): a message carries its sender's
// clock at the start of its operation; a receive ends on the clock no
// earlier than that, and a send that had to wait for ring space no earlier
// than the clock of the receive that made it. Without a started clock a
// message carries the real time. Any transfer through the inner links makes
// ClockEnd() nullopt.
//
// Thread safety: as PeerLinks.
#ifndef TRIRACE_HOSTCCL_SRC_SHM_PEER_LINKS_H_
#define TRIRACE_HOSTCCL_SRC_SHM_PEER_LINKS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "hostccl/src/peer_links.h"
#include "hostccl/src/shm_ring.h"

namespace trirace::hostccl {

// What a rank tells the others at the bootstrap exchange.
struct HostIdentity {
  uint64_t host_key = 0;
  int32_t pid = 0;
  bool shm = false;  // TRIRACE_HOSTCCL_SHM on
  bool receiver_ready = false;  // TRIRACE_HOSTCCL_RECEIVER_READY on

  static constexpr size_t kWireBytes = 16;
  std::string Encode() const;
  // Reads the last kWireBytes of `blob`.
  static absl::StatusOr<HostIdentity> Decode(const std::string& blob);
};

// This process's identity (host key from the sources named above).
HostIdentity LocalHostIdentity();

class ShmPeerLinks final : public PeerLinks {
 public:
  // `ids[p]` is rank p's identity; `comm_hash` names the communicator.
  static absl::StatusOr<std::unique_ptr<ShmPeerLinks>> Create(std::unique_ptr<PeerLinks> inner, int rank, int nranks,
                                                              uint64_t comm_hash,
                                                              const std::vector<HostIdentity>& ids,
                                                              int64_t deadline_ns, const std::atomic<bool>& abort);
  ~ShmPeerLinks() override;

  // Peers this rank sends to / receives from through shared memory.
  int shm_send_peers() const;
  int shm_recv_peers() const;

  absl::StatusOr<std::unique_ptr<MemRegion>> Register(void* base, size_t size) override;
  absl::StatusOr<void*> Isend(int peer, const void* data, size_t size, MemRegion& region) override;
  absl::StatusOr<void*> Irecv(int peer, void* data, size_t size, MemRegion& region) override;
  absl::StatusOr<bool> Test(void* request, size_t* size) override;
  size_t MaxMessageBytes() const override { return inner_->MaxMessageBytes(); }
  bool CrossesNetwork(int peer, bool send) const override {
    return (send ? send_ : recv_)[peer].ring == nullptr;
  }
  void SetTransferFunc(NcclFunc func) override { inner_->SetTransferFunc(func); }
  void StartClock(std::optional<int64_t> start_ns) override;
  std::optional<int64_t> ClockEnd() override;
  // Blocks on the ring's doorbell (up to 1 ms) when every transfer in flight
  // is a receive on one ring, as when a pipeline stage waits for its input;
  // otherwise as the inner links.
  void WaitForActivity(std::chrono::microseconds hint) override;
  void Close() override;

 private:
  struct Request {
    int peer;
    bool send;
    char* data;
    size_t size;
    size_t offset = 0;
    size_t total = 0;
    bool done = false;
    bool waited = false;  // a send not all in the ring when posted
  };
  // One direction to or from one peer.
  struct Lane {
    std::unique_ptr<ShmRing> ring;
    std::deque<Request*> queue;  // in posting order
  };

  ShmPeerLinks(std::unique_ptr<PeerLinks> inner, int rank, int nranks, std::vector<HostIdentity> ids);
  absl::Status Handshake(uint64_t comm_hash, int64_t deadline_ns, const std::atomic<bool>& abort);
  absl::StatusOr<void*> Post(int peer, bool send, char* data, size_t size);
  // Moves what it can on the lane, oldest request first.
  absl::Status Progress(Lane& lane, int peer, bool send);
  absl::Status CheckPeerAlive(int peer);
  absl::StatusOr<void*> CountInner(absl::StatusOr<void*> request);
  // The clock a message of this operation carries, and the rule that an
  // operation ends on the clock no earlier than `ns`.
  int64_t MessageClockNs() const;
  void ClockAtLeast(int64_t ns);

  std::unique_ptr<PeerLinks> inner_;
  int rank_;
  int nranks_;
  std::vector<HostIdentity> ids_;
  std::vector<Lane> send_;
  std::vector<Lane> recv_;
  std::vector<std::string> names_;  // rings we created or opened, to remove at Close
  absl::flat_hash_map<Request*, std::unique_ptr<Request>> live_;
  int inner_in_flight_ = 0;  // requests of the inner links not yet seen done
  // The current operation's device clock (StartClock / ClockEnd).
  std::optional<int64_t> clock_start_ns_;
  std::optional<int64_t> clock_end_ns_;
  bool clock_broken_ = false;  // a transfer went through the inner links
  std::vector<int64_t> next_alive_check_ns_;
  bool closed_ = false;
};

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_SHM_PEER_LINKS_H_
