// examples/hybrid_parallel as a simulator workload: per rank, the stream
// program trainer.cc issues (the same schedule, streams, events, NCCL calls
// and tags), from the example's own Config (its presets and flags).
//
//   hybrid::Config c;  hybrid::ParseArgs({"--preset", "contention"}, &c, &error);
//   absl::StatusOr<sim::Workload> w = sim::HybridExampleWorkload(c);
//
// What it issues, per rank (trainer.cc in brief): three streams (compute,
// dense, sparse); the pipeline's P2P on the compute stream (Megatron's
// combined send/recv groups); each DDP bucket's all-reduce on the dense
// stream once its front-most layer's backward is done (DENSE, on the
// stage's data-parallel comm); the embedding stage's AllGather of row ids
// and AlltoAll of rows (forward) and gradient rows (backward) on the sparse
// stream (SPARSE); the 1F1B flush, 2BW's weight-version wait, and the host
// staying at most `lookahead` iterations ahead. Compute takes exactly its
// emulated time. Comms: per dense stage its data-parallel comm, per replica
// its pipeline comm, and the embedding comm, ranks ordered as the
// example's splits order them.
//
// Thread safety: pure.
#ifndef TRIRACE_SIM_WORKLOADS_HYBRID_EXAMPLE_H_
#define TRIRACE_SIM_WORKLOADS_HYBRID_EXAMPLE_H_

#include "absl/status/statusor.h"
#include "config.h"
#include "sim/program/program.h"

namespace trirace::sim {

// InvalidArgument naming the flag for a config ValidateModel rejects.
absl::StatusOr<Workload> HybridExampleWorkload(const hybrid::Config& c);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_WORKLOADS_HYBRID_EXAMPLE_H_
