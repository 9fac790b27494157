#include "reference.h"

#include <algorithm>

#include "data_model.h"
#include "model.h"

namespace hybrid {

using Floats = std::vector<float>;

Expected ComputeExpected(const Config& c) {
  const int S = c.total_stages(), D = c.replicas, M = c.micro_batches;
  const int first_dense = c.embedding ? 1 : 0;
  const int64_t A = c.act_elems(), Q = c.sparse_elems(), G = c.grad_elems();
  const int K = c.sparse_indices;

  std::vector<std::vector<uint64_t>> fold(S, std::vector<uint64_t>(D, 0));
  // weights[s][l]: identical on every replica after each all-reduce.
  std::vector<std::vector<Floats>> weights(S);
  for (int s = first_dense; s < S; ++s) {
    for (int l = 0; l < c.layers; ++l) {
      weights[s].emplace_back(G);
      data::InitWeights(FirstLayer(c, s) + l, weights[s][l].data(), G);
    }
  }
  std::vector<Floats> table(D);
  if (c.embedding) {
    for (int d = 0; d < D; ++d) {
      table[d].resize(Q);
      data::InitTable(table[d].data(), Q);
    }
  }

  std::vector<std::vector<Floats>> x(S, std::vector<Floats>(D, Floats(A)));
  std::vector<std::vector<Floats>> y(S, std::vector<Floats>(D, Floats(A)));
  Floats gy(A), gx(A), g(G), sum(G);
  std::vector<int32_t> all_idx(size_t(D) * K);
  std::vector<Floats> rows_send(D, Floats(D * Q)), grad_rows(D, Floats(D * Q));
  Floats recv(D * Q);

  for (int it = 0; it < c.iterations; ++it) {
    // signal[s][d]: the gradient signal summed over this iteration.
    std::vector<std::vector<int64_t>> signal(S, std::vector<int64_t>(D, 0));
    for (int m = 0; m < M; ++m) {
      const int64_t mb = int64_t(it) * M + m;
      // Forward.
      if (c.embedding) {
        for (int d = 0; d < D; ++d) data::EmbeddingIndices(d, mb, &all_idx[size_t(d) * K], K);
        for (int d = 0; d < D; ++d) data::EmbeddingRows(d, all_idx.data(), K, D, mb, rows_send[d].data(), Q);
        for (int d = 0; d < D; ++d) {
          for (int p = 0; p < D; ++p) {
            for (int64_t i = 0; i < Q; ++i) recv[p * Q + i] = rows_send[p][d * Q + i];
          }
          data::EmbeddingOutput(recv.data(), D, Q, y[0][d].data(), A);
        }
      }
      for (int d = 0; d < D; ++d) {
        for (int s = first_dense; s < S; ++s) {
          if (s == 0) {
            data::InputActivation(d, mb, x[s][d].data(), A);
          } else {
            x[s][d] = y[s - 1][d];
            fold[s][d] += data::FoldTerm(data::Received::kActivation, mb, x[s][d].data(), A);
          }
          data::DenseForward(s, x[s][d].data(), y[s][d].data(), A);
        }
      }
      // Backward.
      for (int d = 0; d < D; ++d) {
        for (int s = S - 1; s >= first_dense; --s) {
          if (s == S - 1) {
            data::LossGradient(y[s][d].data(), gy.data(), A);
          } else {
            gy = gx;
            fold[s][d] += data::FoldTerm(data::Received::kGradient, mb, gy.data(), A);
          }
          signal[s][d] += data::GradientSignal(gy.data(), A);
          data::DenseBackward(s, gy.data(), x[s][d].data(), gx.data(), A);
        }
        if (c.embedding) {
          fold[0][d] += data::FoldTerm(data::Received::kGradient, mb, gx.data(), A);
          data::EmbeddingGradRows(gx.data(), A, D, Q, grad_rows[d].data());
        }
      }
      if (c.embedding) {
        for (int d = 0; d < D; ++d) {
          for (int p = 0; p < D; ++p) {
            for (int64_t i = 0; i < Q; ++i) recv[p * Q + i] = grad_rows[p][d * Q + i];
          }
          data::AccumulateTable(recv.data(), D, Q, table[d].data());
        }
      }
    }
    // Optimizer: every replica adds the all-reduced sum.
    for (int s = first_dense; s < S; ++s) {
      for (int l = 0; l < c.layers; ++l) {
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (int d = 0; d < D; ++d) {
          data::FillGradient(FirstLayer(c, s) + l, d, it, data::GradientOffset(signal[s][d]), g.data(), G);
          data::AddInto(g.data(), sum.data(), G);
        }
        data::AddInto(sum.data(), weights[s][l].data(), G);
      }
    }
  }

  Expected e;
  for (int s = 0; s < S; ++s) {
    Floats w;
    for (const Floats& layer : weights[s]) w.insert(w.end(), layer.begin(), layer.end());
    for (int d = 0; d < D; ++d) {
      e.rank_hashes.push_back(data::RankHash(s, d, fold[s][d], w, IsEmbeddingStage(c, s) ? table[d] : Floats()));
    }
  }
  e.checksum = data::JobChecksum(e.rank_hashes);
  return e;
}

}  // namespace hybrid
