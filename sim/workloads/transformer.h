// Generated workloads: a transformer model trained with pipeline x data
// (x tensor, inside a node) parallelism under one of four pipeline
// schedules, as a stream program per rank (sim/program/program.h).
//
//   TrainingSpec s;  s.model = *BuiltinModel("gpt-1.3b");  s.pp = 8;  s.dp = 16;  s.tp = 8;
//   absl::StatusOr<Workload> w = TransformerWorkload(s, cluster);
//
// Placement: rank = stage * (dp * tp) + replica * tp + tp_rank (Megatron-LM's
// order, dp-inner: tensor-parallel ranks adjacent, inside a node), or with
// pp_inner rank = (replica * pp + stage) * tp + tp_rank (a replica's stages
// adjacent, as the test bed's presets place them).
//
// Schedules (per stage; M micro-batches per iteration):
//   1f1b         Megatron-LM's: warm-up forwards, one forward / one backward,
//                cool-down backwards; a flush per iteration (the optimizer
//                step waits for every gradient all-reduce).
//   interleaved  Megatron-LM's interleaved 1F1B with `chunks` model chunks
//                per stage (virtual stages chunk * pp + stage); M a multiple
//                of pp; a flush per iteration.
//   2bw          PipeDream-2BW: 1F1B over the whole run with no flush; the
//                all-reduce of iteration i need only end before iteration
//                i + 2 begins (two weight versions).
//   gpipe        all forwards, then all backwards (last micro-batch first);
//                a flush per iteration.
// Communication:
//   - activations (forward) and their gradients (backward), T x hidden x 2
//     bytes per micro-batch divided among the tensor-parallel ranks (each
//     sends its part to its peer in the next stage), as asynchronous sends
//     and receives on streams of their own: a stage posts its receives at
//     iteration start in the order the sender produces them and computes
//     once its input arrived (PyTorch's batch_isend_irecv pipelining);
//   - the data-parallel gradient all-reduce (DENSE) per DDP bucket of
//     bucket_mb, layers packed back to front, each bucket reduced once its
//     front-most layer's backward of the iteration's last micro-batch is
//     done, on a stream of its own;
//   - with moe_every = k, every k-th layer is a mixture-of-experts layer
//     over the data-parallel ranks of its stage: two all-to-alls forward and
//     two backward (SPARSE) of T x hidden x 2 x 2 (top-2) bytes per rank,
//     on the compute stream's critical path;
//   - tensor parallelism's all-reduces (4 per layer and micro-batch) stay
//     inside a node and are folded into the layer's compute time at the
//     node's GPU-to-GPU rate (they share no link with the other traffic).
// Compute: models.h's FLOP and byte counts at the GPU profile; the
// optimizer step (16 bytes per parameter) after the flush. (The simulator
// scales every compute op by Cluster::compute_scale, `--compute-scale`.)
//
// Thread safety: pure but for the cluster's path cache.
#ifndef TRIRACE_SIM_WORKLOADS_TRANSFORMER_H_
#define TRIRACE_SIM_WORKLOADS_TRANSFORMER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/cluster/cluster.h"
#include "sim/program/program.h"
#include "sim/workloads/models.h"

namespace trirace::sim {

enum class PipelineSchedule { k1F1B, kInterleaved, k2BW, kGPipe };
std::optional<PipelineSchedule> PipelineScheduleFromName(const std::string& name);  // 1f1b, interleaved, 2bw, gpipe
const char* PipelineScheduleName(PipelineSchedule s);

struct TrainingSpec {
  ModelSpec model;
  int pp = 1, dp = 1, tp = 1;
  bool pp_inner = false;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  int microbatches = 8;
  int micro_batch_size = 1;
  int chunks = 2;          // interleaved only
  double bucket_mb = 25;   // DDP bucket cap (MiB)
  int grad_bytes = 4;      // bytes per parameter in the all-reduce (fp32 main grads)
  int moe_every = 0;       // 0: no MoE layers
  int iterations = 3;
  int warmup = 1;
  GpuProfile gpu;

  int ranks() const { return pp * dp * tp; }
};

// Checks the spec against the cluster: pp x dp x tp = the cluster's ranks,
// tp divides the GPUs per host and the heads, pp x chunks <= layers, M a
// multiple of pp for interleaved. The error names the flag.
absl::Status ValidateTraining(const TrainingSpec& spec, const Cluster& cluster);

absl::StatusOr<Workload> TransformerWorkload(const TrainingSpec& spec, const Cluster& cluster);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_WORKLOADS_TRANSFORMER_H_
