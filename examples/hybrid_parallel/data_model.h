// The deterministic data the emulator moves, and the checksum over it.
//
// Every buffer holds small integers stored as floats, so every sum the
// collectives compute is exact whatever their reduction order, and two runs
// that moved the right bytes to the right places end with byte-identical
// buffers. The values are chosen so that a misplaced, stale or reordered
// transfer changes them:
//   - activations flow forward through the stages, each stage transforming
//     what it received (mod 64); the last stage turns its output into the
//     gradient that flows back, each stage mixing in its stashed input;
//   - a dense layer's gradient depends on (layer, replica, iteration) and on
//     the gradients the stage received in that iteration; the optimizer adds
//     the all-reduced sum (SUM, not mean: exact) to the weights;
//   - the embedding stage all-gathers row ids, sends each peer rows that
//     depend on that peer's ids (AlltoAll), and in backward sends gradient
//     rows back; its table accumulates what it receives.
// Activations never read the weights, so every schedule (1F1B with flush,
// 2BW without) computes the same final state: the checksum checks the
// communication, not the learning.
//
// Each rank hashes what it received (a commutative fold, so the order in
// which a schedule interleaves micro-batches does not matter), its final
// weights and its table; the job's checksum combines the ranks' hashes in
// (stage, replica) order, so it does not depend on the rank order either.
//
// Pure C++; the functions are cheap elementwise loops. Thread-compatible.
#ifndef EXAMPLES_HYBRID_PARALLEL_DATA_MODEL_H_
#define EXAMPLES_HYBRID_PARALLEL_DATA_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybrid::data {

// ---- hashing ----
uint64_t Mix(uint64_t x);                         // a 64-bit finalizer
uint64_t HashBytes(const void* data, size_t bytes);

enum class Received { kActivation = 1, kGradient = 2 };
// The fold term of one received buffer of micro-batch `g` (global index).
uint64_t FoldTerm(Received kind, int64_t g, const float* data, int64_t n);

// Chains hashes of whole buffers.
class Hasher {
 public:
  void Add(uint64_t v) { h_ = Mix(h_ ^ Mix(v + 0x9e3779b97f4a7c15ULL)); }
  void AddFloats(const float* data, int64_t n) { Add(HashBytes(data, size_t(n) * sizeof(float))); }
  uint64_t digest() const { return h_; }

 private:
  uint64_t h_ = 0x243f6a8885a308d3ULL;
};

// ---- dense stages ----
void InputActivation(int replica, int64_t g, float* x, int64_t n);  // first stage's input
void DenseForward(int stage, const float* x, float* y, int64_t n);
void LossGradient(const float* y, float* gy, int64_t n);  // last stage
void DenseBackward(int stage, const float* gy, const float* x, float* gx, int64_t n);
int64_t GradientSignal(const float* gy, int64_t n);  // summed per iteration
inline int GradientOffset(int64_t signal_sum) { return static_cast<int>(signal_sum % 8); }
void FillGradient(int layer, int replica, int iteration, int offset, float* g, int64_t n);
void InitWeights(int layer, float* w, int64_t n);
void AddInto(const float* sum, float* w, int64_t n);

// ---- embedding stage (q floats per peer, k row ids per rank) ----
void EmbeddingIndices(int replica, int64_t g, int32_t* idx, int k);
// rows[p*q + i]: what this rank (`owner`) sends peer p, from p's gathered ids.
void EmbeddingRows(int owner, const int32_t* all_idx, int k, int peers, int64_t g, float* rows,
                   int64_t q);
void EmbeddingOutput(const float* rows_recv, int peers, int64_t q, float* y, int64_t n);
// out[p*q + i]: the gradient rows this rank sends peer p.
void EmbeddingGradRows(const float* gy, int64_t n, int peers, int64_t q, float* out);
void AccumulateTable(const float* grad_recv, int peers, int64_t q, float* table);
void InitTable(float* table, int64_t q);

// ---- checksums ----
uint64_t RankHash(int stage, int replica, uint64_t fold, const std::vector<float>& weights,
                  const std::vector<float>& table);
// hashes[stage * replicas + replica] -> the job's checksum.
uint64_t JobChecksum(const std::vector<uint64_t>& hashes);

}  // namespace hybrid::data

#endif  // EXAMPLES_HYBRID_PARALLEL_DATA_MODEL_H_
