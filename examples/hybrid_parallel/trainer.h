// Runs the emulated training loop of one rank on NCCL.
//
// Streams (one per communicator, as a framework's process groups have):
//   compute  emulated compute, the data "kernels" (host functions) and the
//            pipeline send/recv on the PP comm;
//   dense    the DP comm's bucket all-reduces and the optimizer update;
//   sparse   the embedding stage's AllGather/AlltoAll on the sparse comm.
// Cross-stream dependencies are events, exactly as on a GPU, and buffers
// shared between streams are rings whose slots are released by events, so
// the data are correct only if every dependency is honoured.
//
// Communicators come from ncclCommSplit of the world comm: DP (color =
// stage, dense stages only), PP (color = replica) and sparse (the embedding
// stage's ranks). Each gets its role through trirace_set_comm_role(), and
// every NCCL call is tagged with layer / stage / micro-batch / phase /
// iteration / class (no-ops without the TriRace shim).
#ifndef EXAMPLES_HYBRID_PARALLEL_TRAINER_H_
#define EXAMPLES_HYBRID_PARALLEL_TRAINER_H_

#include <cstdint>
#include <vector>

#include <nccl.h>

#include "config.h"
#include "device.h"

namespace hybrid {

struct RunResult {
  uint64_t rank_hash = 0;            // data::RankHash of this rank's final state
  std::vector<double> iteration_ms;  // per iteration, as this rank's compute stream saw it
};

// Runs every iteration and waits for all streams. Throws std::runtime_error
// on an NCCL or stream error; the process should then exit (work still
// queued may touch the trainer's buffers, which are therefore not freed).
RunResult RunTraining(const Config& c, const Device& dev, ncclComm_t world);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_TRAINER_H_
