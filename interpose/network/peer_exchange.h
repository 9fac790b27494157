// PeerExchange: each rank of a communicator tells the others where it sits
// (topology/peer_identity.h: host key, GPU bus id, NIC, rail), so that
// schedule mode charges both ends of every op to the right links
// (op_links.h).
//
// Mechanism: one ncclAllGather of a 144-byte record per rank, issued by the
// shim on the new comm's dedicated stream (comm_lane.h) as the comm's first
// operation, when the comm becomes usable:
//   - a blocking comm from ncclCommInitRank / InitRankConfig /
//     InitRankScalable / CommSplit / CommShrink: right after the real call
//     returned ncclSuccess, before the application has the handle;
//   - comms of one ncclCommInitAll: all of them, inside one real
//     ncclGroupStart/End (one thread drives every device);
//   - comms created inside an application's group (the usual way to drive
//     several GPUs from one thread): all of the group's comms, in one real
//     group, right after the application's outermost ncclGroupEnd returned
//     ncclSuccess.
// A host function queued behind the all-gather decodes the records and
// publishes the comm's peers; the launcher waits for it before the creating
// call (or the group end) returns, because the comm's chunk size is agreed
// from the records (scheduler/chunk_planner.h) and must be known before the
// application's first operation. The wait is as long as comm creation
// itself: every rank issues its all-gather on returning from the same
// creating call. A rank that never issues its part (the local failure
// below) leaves the others waiting, with a WARN every 10 s naming the comm.
//
// Why this never changes the application's NCCL call order and cannot
// deadlock: the all-gather is the first operation on its comm on every rank,
// issued at the same point of every rank's sequence of NCCL calls (the
// creating call, or the group end that completes the creation, which every
// rank of the comm makes), so NCCL sees one more collective, in the same
// position on all ranks, before any of the application's. Nothing else is
// reordered: the application's own calls go to NCCL in its order, on its
// threads. Comms that are never exchanged: nonblocking comms (never gated:
// the init has not finished when the call returns), comms of one rank, and
// every comm when TRIRACE_PEER_EXCHANGE=0 or outside schedule mode. These
// are decisions every rank of a comm makes alike (the same parameters, the
// same config); so is the mode, which the job sets for all ranks. The one
// local failure that would skip it on one rank only — the device cannot
// create a stream or 4 KiB of mapped host memory — is also one in which
// NCCL's own next call fails; it is logged as an error naming the comm.
//
// Buffers: device-visible host memory (Device::AllocateGates), addressed by
// NCCL through unified addressing; kept until the exchange object goes.
//
// Thread safety: Start from any thread (callers hold the comm's lane
// lock); the completion runs on a driver thread.
#ifndef TRIRACE_INTERPOSE_NETWORK_PEER_EXCHANGE_H_
#define TRIRACE_INTERPOSE_NETWORK_PEER_EXCHANGE_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "interpose/device/device.h"
#include "interpose/real_nccl.h"
#include "topology/peer_identity.h"

namespace trirace::interpose {

struct CommState;

class PeerExchange {
 public:
  // Called once per started exchange, on a driver thread, with every rank's
  // identity (index = comm rank) or why they cannot be used.
  using Done = std::function<void(CommState& state, absl::StatusOr<std::vector<topo::PeerIdentity>> ranks)>;

  PeerExchange(const RealNccl& real, device::Device& dev, Done done);
  ~PeerExchange();
  PeerExchange(const PeerExchange&) = delete;
  PeerExchange& operator=(const PeerExchange&) = delete;

  // Issues the all-gather of `me` on `state`'s comm on `stream`, then the
  // decoding host function. An error: nothing was issued (the caller logs
  // it); the result of the real all-gather is returned in `*result`.
  absl::Status Start(CommState& state, const topo::PeerIdentity& me, device::StreamHandle stream,
                     ncclResult_t* result);

 private:
  struct Pending;
  static void Finished(void* pending);

  const RealNccl& real_;
  device::Device& dev_;
  const Done done_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_NETWORK_PEER_EXCHANGE_H_
