// Chunk agreement: the one chunk plan setting every rank of a communicator
// uses, from the identity records the ranks exchanged at its creation
// (peer_exchange.h).
//
// Why: the shim splits an all-reduce into chunks, each a separate NCCL
// call, and every rank of a comm must make the same calls in the same
// order, or the job hangs or sums the wrong elements. The split depends on
// the comm's chunk size (scheduler/chunk_planner.h CommChunkBytes) and on
// whether floating-point sums may be split, which come from
// TRIRACE_CHUNK_BYTES, TRIRACE_CHUNK_US, TRIRACE_CHUNK_MIN_BYTES and
// TRIRACE_CHUNK_FLOAT_REDUCTIONS. A job normally sets those alike on every
// rank, but a launcher that forwards a variable to some nodes only, or a
// per-node wrapper script, would make ranks plan differently: a hang, or
// silently wrong sums, inside someone's training job. So the settings travel in the records and every
// rank plans with those of the comm's rank 0. Where they differ the caller
// logs it (once per process as a warning), naming the variable, the two
// values and the rank.
//
// Usage (the launcher, once the records are in):
//   AgreedChunks a = AgreeChunks(peers.ranks, peers.hosts);
//   if (!a.differs.empty()) TRIRACE_WARN(..., a.differs);
//   comm.chunk_float_reductions = a.settings.float_reductions;
//   comm.chunk_bytes = a.bytes;
//
// Thread safety: pure.
#ifndef TRIRACE_INTERPOSE_GATE_CHUNK_AGREEMENT_H_
#define TRIRACE_INTERPOSE_GATE_CHUNK_AGREEMENT_H_

#include <cstdint>
#include <span>
#include <string>

#include "topology/peer_identity.h"

namespace trirace::interpose {

struct AgreedChunks {
  // The comm's chunk size in bytes (0: never split).
  uint64_t bytes = 0;
  // The settings used: rank 0's (settings.float_reductions: floating-point
  // sums on comms of three or more ranks are split too).
  topo::ChunkSettings settings{};
  // What the size came from besides them: the slowest NIC among the ranks
  // (Gbit/s, 0 if none is known), and whether every rank marks classes.
  double slowest_gbps = 0;
  bool every_class_priority = false;
  // Empty when every rank has rank 0's settings; else what differs first,
  // e.g. "rank 2 has TRIRACE_CHUNK_US=2000 where rank 0 has 4000".
  std::string differs;
};

// The agreement for a comm whose ranks' records are `ranks` (in comm rank
// order) spanning `hosts` hosts: rank 0's chunk settings, the slowest known
// NIC among all ranks, and the split waived only where every rank has
// class priority on the wire. Reads nothing but the records, which are the
// same bytes on every rank, so every rank gets the same answer. An empty
// `ranks` gives the zero AgreedChunks (never split).
AgreedChunks AgreeChunks(std::span<const topo::PeerIdentity> ranks, int hosts);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_GATE_CHUNK_AGREEMENT_H_
