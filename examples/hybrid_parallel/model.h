// The shape of the emulated model: where each rank sits (stage, replica),
// which global layers a stage holds, how its gradients are bucketed, and how
// many bytes each traffic class moves per iteration.
//
// Layers are numbered front to back across the whole model: the embedding
// (when there is one) is layer 0, then the dense layers stage by stage.
// Gradient buckets follow PyTorch DDP: layers are taken in reverse order
// (the order backward produces their gradients) and packed into a bucket
// until the next layer would pass the cap; a bucket always holds at least
// one layer. A bucket's all-reduce starts when its front-most layer's
// backward is done.
//
// Pure C++ (no NCCL).
#ifndef EXAMPLES_HYBRID_PARALLEL_MODEL_H_
#define EXAMPLES_HYBRID_PARALLEL_MODEL_H_

#include <cstdint>
#include <vector>

#include "config.h"

namespace hybrid {

struct Place {
  int stage = 0;    // 0 = first (the embedding stage when there is one)
  int replica = 0;  // data-parallel index
};

Place PlaceOf(const Config& c, int rank);
int RankOf(const Config& c, int stage, int replica);

inline bool IsEmbeddingStage(const Config& c, int stage) { return c.embedding && stage == 0; }
inline bool IsLastStage(const Config& c, int stage) { return stage == c.total_stages() - 1; }

// Global index of a dense stage's first layer (stage must be dense).
int FirstLayer(const Config& c, int stage);

struct Bucket {
  std::vector<int> layers;  // local layer indexes, descending (backward order)
  int64_t elems = 0;        // floats; layers are laid out in `layers` order
};

// The DDP buckets of a dense stage (every dense stage has the same layout).
std::vector<Bucket> Buckets(const Config& c);

// Ring slots a stage keeps for activations and their gradients: at least
// the micro-batches it has forwarded but not yet backwarded, plus one.
int RingSlots(const Config& c, int stage);

// Bytes one rank sends per iteration, per traffic class.
struct Traffic {
  int64_t p2p = 0;     // activations forward + gradients backward
  int64_t dense = 0;   // bytes given to all-reduce (the payload, not the wire)
  int64_t sparse = 0;  // AllGather + AlltoAll payload
};
Traffic TrafficPerIteration(const Config& c, int stage);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_MODEL_H_
