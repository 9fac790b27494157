// The deterministic chunk planner: how a large collective is split into
// gated chunks.
//
// Every rank of a communicator must issue the same sequence of NCCL calls,
// so the split may depend only on what every rank knows identically: the
// collective, its element count, the element size and the comm's chunk
// size. It never depends on timing, occupancy or the policy.
//
// The chunk size (CommChunkBytes) is wire time, agreed once per comm: about
// chunk_ns (TRIRACE_CHUNK_US) at the rate of the slowest NIC among the
// comm's ranks, at least min_bytes (TRIRACE_CHUNK_MIN_BYTES), from the
// identity records the ranks exchanged at comm creation
// (interpose/network/peer_exchange.h). Those records are the same bytes on every
// rank, the launcher waits for them before the comm is handed to the
// application, and the rule reads nothing else: so every rank plans with
// the same size even where the ranks' own NICs run at different rates. A
// comm whose ranks share one host (no NIC crossed) or that was not
// exchanged uses kUnagreedChunkBytes, a constant; a non-zero fixed size
// (TRIRACE_CHUNK_BYTES) replaces the rule on every comm. The settings
// themselves (fixed size, chunk_ns, min_bytes) are the comm's rank 0's,
// carried in the same records (interpose/gate/chunk_agreement.h). A comm
// across hosts whose every record says class priority
// (PeerIdentity::class_priority) is not split: P2P and SPARSE then pass
// DENSE on the wire packet by packet, and a chunk would
// only add a step to DENSE's path (measured:
// docs/experiments/2026-12-05-no-chunks-under-class-priority.md); one
// rank without it keeps the split on every rank.
//
// The rule (PlanChunks):
//   - Only AllReduce, Reduce and Broadcast (and Bcast) are split (their output is
//     element-wise, so a chunk is the same call on a sub-range). Every other
//     function, and any op inside a user's ncclGroupStart/End (the launcher
//     does not call the planner for those), is one chunk.
//   - An op of at most `chunk_bytes` bytes, or chunk_bytes == 0, is one chunk.
//   - Otherwise the chunk length in elements is chunk_bytes / dtype_size,
//     rounded down to a multiple of kChunkGranuleBytes / dtype_size elements
//     (at least one granule); if that gives more than kMaxChunksPerOp chunks
//     the length grows (in whole granules) until it does not. All chunks have
//     that length except the last, which takes the remainder.
// Offsets and counts are in elements, so every chunk boundary is aligned to
// the element size; the chunks cover [0, count) exactly, in order, without
// overlap.
//
// Thread safety: pure functions.
#ifndef TRIRACE_SCHEDULER_CHUNK_PLANNER_H_
#define TRIRACE_SCHEDULER_CHUNK_PLANNER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/nccl_func.h"

namespace trirace::sched {

// True for the functions PlanChunks may split.
bool IsChunkable(NcclFunc f);

// What a reduction does with its elements (NCCL's ncclRedOp_t, without the
// NCCL header), for SplitKeepsEveryBit.
enum class ReduceKind : uint8_t {
  kNone,    // no reduction: data movement (Broadcast, AllGather, ...)
  kSum,
  kProd,
  kAvg,
  kMinMax,  // ncclMin, ncclMax
  kOther,   // PreMulSum, user-defined operations
};

// True when issuing the op as several calls on sub-ranges gives every bit
// the whole call gives: always for Broadcast; for AllReduce, Reduce and
// ReduceScatter with min/max, with any sum, product or average on two
// ranks (each element is one commutative operation on two values) or on
// integer elements; never otherwise. A chunked floating-point sum on
// three or more ranks moves the ring's segment boundaries and so the
// order of additions (TRIRACE_CHUNK_FLOAT_REDUCTIONS accepts that). The
// shim's launcher (interpose/op.h SplitIsExact) and the simulator decide
// with this one rule.
bool SplitKeepsEveryBit(NcclFunc f, ReduceKind op, bool integer_elements, int nranks);

// Chunk boundaries aim at multiples of this many bytes (when the element
// size divides it), which keeps chunks friendly to NCCL's protocols.
inline constexpr uint64_t kChunkGranuleBytes = 4096;
// No op is split into more chunks than this (bounds gates per call).
inline constexpr uint32_t kMaxChunksPerOp = 64;

// One chunk: elements [offset, offset + count) of the op's buffers.
struct Chunk {
  uint64_t offset = 0;
  uint64_t count = 0;
  bool operator==(const Chunk&) const = default;
};

struct ChunkPlan {
  std::vector<Chunk> chunks;
  bool split() const { return chunks.size() > 1; }
  bool operator==(const ChunkPlan&) const = default;
};

// The chunk size of a comm without agreed records, the same on every rank.
inline constexpr uint64_t kUnagreedChunkBytes = 4ull << 20;

// What the rule gives: `fixed_bytes` when non-zero; else 0 (never split)
// when chunk_ns is 0, or when `hosts` > 1 and every_rank_class_priority;
// else kUnagreedChunkBytes when `hosts` <= 1 or no rate is known
// (slowest_nic_bytes_per_s <= 0); else max(min_bytes, chunk_ns of wire
// time at slowest_nic_bytes_per_s), rounded down to kChunkGranuleBytes.
uint64_t CommChunkBytes(uint64_t fixed_bytes, int64_t chunk_ns, uint64_t min_bytes, int hosts,
                        double slowest_nic_bytes_per_s, bool every_rank_class_priority = false);

// The plan for `count` elements of `dtype_size` bytes each (dtype_size >= 1;
// 0 is treated as 1). A zero-count op is one empty chunk, so the launcher
// still issues the call exactly once.
ChunkPlan PlanChunks(NcclFunc func, uint64_t count, size_t dtype_size, uint64_t chunk_bytes);

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_CHUNK_PLANNER_H_
