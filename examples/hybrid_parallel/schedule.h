// The per-stage order of work of the two pipeline schedules.
//
// A schedule is a list of Actions for one stage; the trainer walks it and
// issues each action's compute and P2P calls. Micro-batches have global ids
// g = iteration * micro_batches + m.
//
//   k1F1B (Megatron-LM, non-interleaved, with flush): each iteration runs
//     warm-up forwards (stages - stage - 1, at most M), then one forward /
//     one backward pairs, then the cool-down backwards; the iteration ends
//     when every backward is done and the gradients are all-reduced
//     (IterationEnd waits for them).
//   k2BW (PipeDream-2BW-like, no flush): the same 1F1B pattern over the
//     whole run as one stream of micro-batches, so the pipeline never
//     drains between iterations; the gradient all-reduce of iteration i
//     overlaps iteration i+1 and only has to be done before iteration i+2
//     starts (double-buffered weights: one version of staleness).
//
// The P2P steps are the combined operations Megatron's p2p_communication
// uses, so neighbouring stages' calls pair up one to one:
//   send_forward_recv_backward (to/from stage+1) and
//   send_backward_recv_forward (to/from stage-1) are one NCCL group each.
// A step whose peer does not exist (recv_forward on the first stage, ...)
// is issued as nothing.
//
// Pure C++ (no NCCL).
#ifndef EXAMPLES_HYBRID_PARALLEL_SCHEDULE_H_
#define EXAMPLES_HYBRID_PARALLEL_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"

namespace hybrid {

enum class Step {
  kIterationBegin,            // iteration: before its first micro-batch
  kRecvForward,               // fwd: input activation from stage-1
  kForward,                   // fwd
  kSendForward,               // fwd: output activation to stage+1
  kSendForwardRecvBackward,   // fwd (send), bwd (recv gradient from stage+1)
  kBackward,                  // bwd
  kSendBackwardRecvForward,   // bwd (send gradient to stage-1), fwd (recv)
  kRecvBackward,              // bwd
  kSendBackward,              // bwd
  kIterationEnd,              // iteration: after its last backward and send
};

struct Action {
  Step step;
  int64_t fwd = -1;     // micro-batch of the forward part, if any
  int64_t bwd = -1;     // micro-batch of the backward part, if any
  int iteration = -1;   // kIterationBegin / kIterationEnd
};

std::vector<Action> StageSchedule(const Config& c, int stage);

const char* StepName(Step s);
std::string ActionText(const Action& a);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_SCHEDULE_H_
