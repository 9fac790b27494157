#include "model.h"

namespace hybrid {

Place PlaceOf(const Config& c, int rank) {
  Place p;
  if (c.order == Order::kDpInner) {
    p.stage = rank / c.replicas;
    p.replica = rank % c.replicas;
  } else {
    p.stage = rank % c.total_stages();
    p.replica = rank / c.total_stages();
  }
  return p;
}

int RankOf(const Config& c, int stage, int replica) {
  return c.order == Order::kDpInner ? stage * c.replicas + replica
                                    : replica * c.total_stages() + stage;
}

int FirstLayer(const Config& c, int stage) {
  return c.embedding ? 1 + (stage - 1) * c.layers : stage * c.layers;
}

std::vector<Bucket> Buckets(const Config& c) {
  std::vector<Bucket> buckets;
  const int64_t cap = c.bucket_kb * 256;
  for (int l = c.layers - 1; l >= 0; --l) {
    if (buckets.empty() || buckets.back().elems + c.grad_elems() > cap) buckets.emplace_back();
    buckets.back().layers.push_back(l);
    buckets.back().elems += c.grad_elems();
  }
  return buckets;
}

int RingSlots(const Config& c, int stage) { return c.total_stages() - stage + 1; }

Traffic TrafficPerIteration(const Config& c, int stage) {
  Traffic t;
  const int64_t act_bytes = c.act_elems() * 4;
  const int sends = (stage > 0 ? 1 : 0) + (IsLastStage(c, stage) ? 0 : 1);
  t.p2p = int64_t{sends} * act_bytes * c.micro_batches;
  if (IsEmbeddingStage(c, stage)) {
    t.sparse = (int64_t{c.sparse_indices} * 4 + 2 * c.sparse_elems() * 4 * c.replicas) *
               c.micro_batches;
  } else {
    t.dense = int64_t{c.layers} * c.grad_elems() * 4;
  }
  return t;
}

}  // namespace hybrid
