#include "data_model.h"

#include <cstring>

namespace hybrid::data {
namespace {

inline uint64_t U(float f) { return static_cast<uint64_t>(f); }  // values are >= 0 here
inline float F(uint64_t v) { return static_cast<float>(v); }

}  // namespace

uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t HashBytes(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  if (i < bytes) std::memcpy(&tail, p + i, bytes - i);
  return Mix(h ^ tail);
}

uint64_t FoldTerm(Received kind, int64_t g, const float* data, int64_t n) {
  uint64_t key = Mix(static_cast<uint64_t>(kind) * 0x100000001b3ULL + static_cast<uint64_t>(g));
  return Mix(HashBytes(data, size_t(n) * sizeof(float)) + key);
}

void InputActivation(int replica, int64_t g, float* x, int64_t n) {
  const uint64_t base = uint64_t(replica) * 13 + uint64_t(g) * 5;
  for (int64_t i = 0; i < n; ++i) x[i] = F((uint64_t(i) * 7 + base) & 63);
}

void DenseForward(int stage, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = F((U(x[i]) + uint64_t(stage) + 1 + (uint64_t(i) & 3)) & 63);
}

void LossGradient(const float* y, float* gy, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gy[i] = F((U(y[i]) * 3 + 1) & 63);
}

void DenseBackward(int stage, const float* gy, const float* x, float* gx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gx[i] = F((U(gy[i]) + U(x[i]) + uint64_t(stage)) & 63);
}

int64_t GradientSignal(const float* gy, int64_t n) {
  return static_cast<int64_t>(U(gy[0]) + U(gy[n - 1]));
}

void FillGradient(int layer, int replica, int iteration, int offset, float* g, int64_t n) {
  // In [-4, 11]: sums over replicas and iterations stay exact integers.
  const int64_t base = int64_t(layer) * 3 + int64_t(replica) * 7 + iteration;
  for (int64_t j = 0; j < n; ++j) {
    g[j] = static_cast<float>((j * 5 + base) % 9 + offset - 4);
  }
}

void InitWeights(int layer, float* w, int64_t n) {
  for (int64_t j = 0; j < n; ++j) w[j] = F((uint64_t(j) + uint64_t(layer)) & 15);
}

void AddInto(const float* sum, float* w, int64_t n) {
  for (int64_t j = 0; j < n; ++j) w[j] += sum[j];
}

void EmbeddingIndices(int replica, int64_t g, int32_t* idx, int k) {
  for (int j = 0; j < k; ++j) {
    idx[j] = static_cast<int32_t>((int64_t(replica) * 131 + int64_t(j) * 7 + g * 3) % 1024);
  }
}

void EmbeddingRows(int owner, const int32_t* all_idx, int k, int peers, int64_t g, float* rows,
                   int64_t q) {
  for (int p = 0; p < peers; ++p) {
    uint64_t ids = 0;
    for (int j = 0; j < k; ++j) ids += uint64_t(all_idx[int64_t(p) * k + j]);
    const uint64_t base = ids + uint64_t(owner) * 11 + uint64_t(g);
    float* out = rows + int64_t(p) * q;
    for (int64_t i = 0; i < q; ++i) out[i] = F((base + uint64_t(i) * 3) & 63);
  }
}

void EmbeddingOutput(const float* rows_recv, int peers, int64_t q, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint64_t s = uint64_t(i);
    const int64_t r = i % q;
    for (int p = 0; p < peers; ++p) s += U(rows_recv[int64_t(p) * q + r]);
    y[i] = F(s & 63);
  }
}

void EmbeddingGradRows(const float* gy, int64_t n, int peers, int64_t q, float* out) {
  for (int p = 0; p < peers; ++p) {
    for (int64_t i = 0; i < q; ++i) {
      out[int64_t(p) * q + i] = F((U(gy[(i + int64_t(p) * q) % n]) + uint64_t(p) + uint64_t(i)) & 63);
    }
  }
}

void AccumulateTable(const float* grad_recv, int peers, int64_t q, float* table) {
  for (int p = 0; p < peers; ++p) {
    const float* in = grad_recv + int64_t(p) * q;
    for (int64_t i = 0; i < q; ++i) table[i] += in[i];
  }
}

void InitTable(float* table, int64_t q) {
  for (int64_t i = 0; i < q; ++i) table[i] = F(uint64_t(i) & 15);
}

uint64_t RankHash(int stage, int replica, uint64_t fold, const std::vector<float>& weights,
                  const std::vector<float>& table) {
  Hasher h;
  h.Add(uint64_t(stage));
  h.Add(uint64_t(replica));
  h.Add(fold);
  h.AddFloats(weights.data(), int64_t(weights.size()));
  h.AddFloats(table.data(), int64_t(table.size()));
  return h.digest();
}

uint64_t JobChecksum(const std::vector<uint64_t>& hashes) {
  Hasher h;
  for (uint64_t v : hashes) h.Add(v);
  return h.digest();
}

}  // namespace hybrid::data
