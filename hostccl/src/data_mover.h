// The two data movers every hostccl operation is built from (named apart
// from the scheduler's engine, which decides when work may start).
//
// RunRing streams a fixed sequence of messages from the previous rank to the
// next one (ring and chain algorithms). Each incoming message is received
// either straight into its destination, or into a staging slot and combined
// with a local input (reduction); it may then be forwarded as one of the
// outgoing messages. Outgoing messages leave in order, each once its
// producer (if any) has been processed. Messages are sent slice-major (all
// steps of slice 0, then slice 1, ...), and with two or more staging slots
// per direction the ring cannot deadlock: the earliest held message can
// always move. Memory: 2 x depth staging slots per communicator, whatever
// the message size.
//
// RunP2p moves a set of sends and receives to several peers concurrently
// (group semantics): per peer, sends run in order and receives run in order,
// each split into messages of at most the slice size, directly from/to the
// user buffers; messages to self are copied.
//
// Receiver-ready (MoverEnv::receiver_ready, TRIRACE_HOSTCCL_RECEIVER_READY):
// in a ring (RingPlan::ring) a rank sends nothing to the next rank over the
// network before that rank has started the same operation. Each rank first
// sends a one-byte token to the rank it receives from, then waits for the
// token of the rank it sends to; links inside a host (shared memory) skip
// it. This approximates NCCL's net transport over InfiniBand and RoCE,
// where a send waits for the receiver's posted buffer (clear to send) and
// the receiver posts when its host launches the collective: a collective's
// bytes do not enter a receiver's link before the receiver launched it, so
// a gate on the receiving host also orders what arrives there. Without it
// the plugin's TCP sends eagerly, as NCCL's socket transport does. Chains
// (Broadcast, Reduce) and RunP2p (Send/Recv, AlltoAll, Gather, Scatter) stay
// eager: hostccl has no staging buffers for them, so a waiting send would
// hold the sender's stream where NCCL's kernel finishes into its buffers.
//
// Both poll the peer links, back off when idle, and stop with Aborted when
// the abort flag is raised.
//
// Thread safety: one mover call per communicator at a time.
#ifndef TRIRACE_HOSTCCL_SRC_DATA_MOVER_H_
#define TRIRACE_HOSTCCL_SRC_DATA_MOVER_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "hostccl/src/reduce.h"
#include "hostccl/src/peer_links.h"

namespace trirace::hostccl {

// What a mover runs with: the links, the staging area, the flags.
struct MoverEnv {
  PeerLinks* links = nullptr;
  const std::atomic<bool>* abort = nullptr;
  // CLOCK_MONOTONIC ns past which RunP2p gives up with DeadlineExceeded
  // (0: none; operations have none, a set-up exchange does).
  int64_t deadline_ns = 0;
  int rank = 0;
  int depth = 2;               // slots per direction (>= 2)
  size_t slot_bytes = 0;       // bytes per slot = the slice size
  char* staging = nullptr;     // 2 * depth slots: receive pool, then send pool
  MemRegion* staging_region = nullptr;
  // Receiver-ready handshake before a ring's first network send (above);
  // needs two bytes inside staging_region.
  bool receiver_ready = false;
  char* ready_tokens = nullptr;  // [0] sent, [1] received
  std::vector<std::unique_ptr<MemRegion>> regions;  // the operation's user buffers

  // The region holding [p, p+n); nullptr when none does.
  MemRegion* RegionOf(const void* p, size_t n) const;
  // Registers [p, p+n) for this operation (no-op for n == 0).
  absl::Status AddRegion(const void* p, size_t n);
};

struct RingIn {
  size_t elems = 0;
  char* dst = nullptr;          // final destination (nullptr: keep in the slot)
  const char* local = nullptr;  // combine with this input (nullptr: plain copy into dst)
  bool finish = false;          // apply Finish() to dst afterwards
  int forward = -1;             // index of the RingOut carrying the result, or -1
};

struct RingOut {
  size_t elems = 0;
  const char* src = nullptr;  // data when producer == -1
  bool contribute = false;    // send Contribute(src) (premultiplied) instead of src
  int producer = -1;          // RingIn whose result this forwards
};

struct RingPlan {
  int prev = -1;
  int next = -1;
  // A ring (AllReduce, ReduceScatter, AllGather): every rank receives and
  // sends, and no rank can finish before every rank started, so the
  // receiver-ready handshake adds no wait. Chains (Broadcast, Reduce) are
  // false and stay eager: their head only sends, and making it wait for
  // the next rank would block a root that NCCL lets finish into its
  // buffers.
  bool ring = false;
  size_t type_size = 1;
  Reduction reduction;
  std::vector<RingIn> ins;
  std::vector<RingOut> outs;
};

absl::Status RunRing(const RingPlan& plan, MoverEnv& env);

struct P2pTransfer {
  int peer = 0;
  bool send = false;
  char* data = nullptr;
  size_t bytes = 0;
};

absl::Status RunP2p(const std::vector<P2pTransfer>& transfers, MoverEnv& env);

// Idle back-off shared by the movers: yields first, then waits on the links
// (PeerLinks::WaitForActivity), or sleeps when there are none.
class Backoff {
 public:
  void Reset() { idle_ = 0; }
  void Idle(PeerLinks* links = nullptr);

 private:
  int idle_ = 0;
};

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_DATA_MOVER_H_
