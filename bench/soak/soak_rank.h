// One rank of the soak: a long NCCL workload over communicators that come
// and go, with every result checked.
//
// The run is `samples` waves of ops/samples ops each. In a wave a new comm
// is created every ops/comms ops (its ncclUniqueId made by rank 0 and sent
// down a pipe to each other rank), the oldest is destroyed when more than
// `alive` are open, and each op goes to one of the open comms: a small
// AllReduce (sum or max), AllGather, Broadcast or a grouped ring of
// Send/Recv, of 1-256 int32/float/int64/double elements, on the comm's own
// hostccl stream, synchronised and compared element by element with the
// value every rank can compute. Every rank draws the same sequence from
// the seed, so the ranks agree on every call. Ops carry annotation tags (a
// wave-wide stage, per-op layer, micro-batch and phase), every 50 ops form
// an iteration (trirace_iteration_begin/end), and comms get roles (declared
// after creation, declared for creation with a CommRoleScope, or left to
// inference), so the scheduler's tagged paths are the ones soaked.
//
// At the end of each wave the rank measures itself (soak_probe.h) with the
// wave's comms still open, then destroys them all: the shim logs its
// trace-buffer summary when the last comm goes, and the rank adds it to the
// wave's sample line. A failed call ends the rank (the ranks could no longer
// agree); a wrong value is counted and the run goes on.
#ifndef TRIRACE_BENCH_SOAK_SOAK_RANK_H_
#define TRIRACE_BENCH_SOAK_SOAK_RANK_H_

#include "soak_options.h"

namespace trirace::soak {

// Runs rank `o.rank`; prints its sample and result lines on stdout. Returns
// the exit status: 0 when every call succeeded and every value was right.
int RunRank(const Options& o);

}  // namespace trirace::soak

#endif  // TRIRACE_BENCH_SOAK_SOAK_RANK_H_
