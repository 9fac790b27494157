// Configuration of the hybrid-parallel training emulator: the model shape
// (stages, replicas, layers, sizes, compute times), the schedule and how the
// process finds its rank and the other ranks.
//
// Parsing (CLI11, one table of flags in config.cc) is `--flag value` or
// `--flag=value`; given twice, the last value counts. A `--preset NAME` is
// applied first wherever it appears; other flags override it. Defaults for the
// process identity come from the environment when the flag is absent:
//   --rank      <- RANK
//   --nranks    <- WORLD_SIZE
//   --uid-file  <- RENDEZVOUS_FILE
//
// Pure C++ (no NCCL): the unit tests and the reference checksum use it too.
#ifndef EXAMPLES_HYBRID_PARALLEL_CONFIG_H_
#define EXAMPLES_HYBRID_PARALLEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace hybrid {

enum class Schedule {
  k1F1B,  // Megatron-style one-forward-one-backward with a flush per iteration
  k2BW,   // PipeDream-2BW-style: no flush, weights one iteration stale
};

enum class Order {
  kDpInner,  // rank = stage * replicas + replica (replicas of a stage adjacent)
  kPpInner,  // rank = replica * stages + stage (stages of a replica adjacent)
};

struct Config {
  // Model and parallelism.
  int stages = 2;          // dense pipeline stages
  int replicas = 2;        // data-parallel replicas
  bool embedding = false;  // an embedding stage in front (SPARSE traffic)
  int layers = 4;          // layers per dense stage
  Schedule schedule = Schedule::k1F1B;
  Order order = Order::kDpInner;
  int micro_batches = 4;
  int iterations = 6;  // total, warm-up included
  int warmup = 2;      // first iterations left out of the timing

  // Emulated compute, microseconds.
  int64_t fwd_us = 200;      // per dense layer, per micro-batch
  int64_t bwd_us = 400;      // per dense layer, per micro-batch
  int64_t emb_fwd_us = 100;  // embedding stage, per micro-batch
  int64_t emb_bwd_us = 200;

  // Traffic sizes, KiB.
  int64_t act_kb = 64;        // P2P activation (and its gradient) per micro-batch
  int64_t grad_kb = 256;      // DENSE gradient per layer
  int64_t bucket_kb = 1024;   // DDP bucket cap (a bucket holds >= 1 layer)
  int64_t sparse_kb = 32;     // SPARSE rows per peer per micro-batch (AlltoAll)
  int sparse_indices = 256;   // row ids per rank per micro-batch (AllGather)

  // Process identity and rendezvous.
  int rank = -1;
  int nranks = -1;
  std::string uid_file;
  int timeout_s = 300;        // watchdog: exit 124 after this long
  int lookahead = 1;          // iterations the host may run ahead of the streams

  // What to do.
  bool reference_only = false;  // print the expected checksum; no NCCL
  bool help = false;
  std::string preset = "default";

  int total_stages() const { return stages + (embedding ? 1 : 0); }
  int world_size() const { return total_stages() * replicas; }
  int64_t act_elems() const { return act_kb * 256; }    // floats
  int64_t grad_elems() const { return grad_kb * 256; }  // floats per layer
  int64_t sparse_elems() const { return sparse_kb * 256; }  // floats per peer
};

// The flag reference printed by --help (CLI11's, from the same table).
std::string Usage();

// Parses argv (argv[0] is skipped). On error returns false and sets *error
// to a message naming the flag, the value and what is accepted.
bool ParseArgs(int argc, const char* const* argv, Config* config, std::string* error);
bool ParseArgs(const std::vector<std::string>& args, Config* config, std::string* error);

// Applies a named preset to *config; false (with *error) for an unknown name.
bool ApplyPreset(const std::string& name, Config* config, std::string* error);
std::vector<std::string> PresetNames();

// Checks the model shape (not the process identity). False with *error
// naming the offending flag otherwise.
bool ValidateModel(const Config& config, std::string* error);
// Also checks rank, nranks (= total_stages * replicas) and the id file.
bool ValidateRun(const Config& config, std::string* error);

const char* ScheduleName(Schedule s);
const char* OrderName(Order o);

// The model part of the config as a JSON object (no process identity), for
// the RESULT and REFERENCE lines; keys in a fixed order.
nlohmann::ordered_json ConfigJson(const Config& config);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_CONFIG_H_
