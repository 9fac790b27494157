// Built-in models and the GPU profile that turns their layers into time,
// for generated workloads (transformer.h).
//
// Models (BuiltinModel): bert-large (24 layers, hidden 1024, 16 heads,
// sequence 512, vocabulary 30522), gpt2-xl (48, 1600, 25, 1024, 50257),
// gpt-1.3b (24, 2048, 16, 2048, 50257), gpt-7b (32, 4096, 32, 2048, 50257).
//
// Per layer and micro-batch of T = micro_batch_size x sequence tokens
// (Megatron-LM's counting, Narayanan et al. 2021): forward FLOPs
// 24 T h^2 + 4 T s h, backward twice that; 12 h^2 + 13 h parameters; the
// memory traffic of the forward, 2 bytes per value, the layer's weights
// plus 34 T h activation values; the output layer 2 T h V FLOPs. With
// tensor parallelism t every term is divided by t.
//
// Thread safety: pure.
#ifndef TRIRACE_SIM_WORKLOADS_MODELS_H_
#define TRIRACE_SIM_WORKLOADS_MODELS_H_

#include <optional>
#include <string>
#include <vector>

namespace trirace::sim {

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int sequence = 0;
  int vocabulary = 0;

  double LayerParams() const { return 12.0 * hidden * hidden + 13.0 * hidden; }
  double EmbeddingParams() const { return double(vocabulary) * hidden + double(sequence) * hidden; }
  double Params() const { return layers * LayerParams() + EmbeddingParams(); }
  // Forward FLOPs of one layer over `tokens` tokens.
  double LayerForwardFlops(double tokens) const {
    return 24.0 * tokens * hidden * hidden + 4.0 * tokens * sequence * hidden;
  }
  double LayerForwardBytes(double tokens) const { return 2.0 * (LayerParams() + 34.0 * tokens * hidden); }
  double HeadForwardFlops(double tokens) const { return 2.0 * tokens * hidden * vocabulary; }
};

std::vector<std::string> BuiltinModelNames();
std::optional<ModelSpec> BuiltinModel(const std::string& name);

// What a GPU achieves (not its peak): dense FLOP/s and memory bandwidth.
struct GpuProfile {
  double tflops = 0;
  double mem_gbytes_per_s = 0;
  // Seconds for `flops` of math and `bytes` of memory traffic.
  double Seconds(double flops, double bytes) const {
    return flops / (tflops * 1e12) + bytes / (mem_gbytes_per_s * 1e9);
  }
};

// The profile a built-in cluster's GPUs default to: dgx-h100 450 TFLOP/s
// and 2700 GB/s (about 45% and 80% of an H100 SXM's bf16 peak and HBM3);
// pcie-2nic 150 and 1500 (an A100 PCIe's); anything else (the test bed,
// spec files) 100 and 1000.
GpuProfile DefaultGpuProfile(const std::string& cluster_name);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_WORKLOADS_MODELS_H_
