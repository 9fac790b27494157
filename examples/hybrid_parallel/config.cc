#include "config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

namespace hybrid {
namespace {

bool ParseInt64(const std::string& text, int64_t min, int64_t max, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  if (v < min || v > max) return false;
  *out = v;
  return true;
}

std::string Range(int64_t min, int64_t max) {
  std::ostringstream s;
  s << "an integer from " << min << " to " << max;
  return s.str();
}

// One flag: its name, whether it takes a value, and how to apply it.
struct Flag {
  bool takes_value;
  std::function<bool(const std::string& value, Config* c, std::string* accepted)> apply;
};

Flag IntFlag(int Config::*field, int64_t min, int64_t max) {
  return {true, [=](const std::string& v, Config* c, std::string* accepted) {
            int64_t x;
            if (!ParseInt64(v, min, max, &x)) {
              *accepted = Range(min, max);
              return false;
            }
            c->*field = static_cast<int>(x);
            return true;
          }};
}

Flag Int64Flag(int64_t Config::*field, int64_t min, int64_t max) {
  return {true, [=](const std::string& v, Config* c, std::string* accepted) {
            int64_t x;
            if (!ParseInt64(v, min, max, &x)) {
              *accepted = Range(min, max);
              return false;
            }
            c->*field = x;
            return true;
          }};
}

Flag BoolFlag(bool Config::*field, bool value) {
  return {false, [=](const std::string&, Config* c, std::string*) {
            c->*field = value;
            return true;
          }};
}

const std::map<std::string, Flag>& Flags() {
  static const auto* flags = new std::map<std::string, Flag>{
      {"stages", IntFlag(&Config::stages, 1, 64)},
      {"replicas", IntFlag(&Config::replicas, 1, 256)},
      {"embedding", BoolFlag(&Config::embedding, true)},
      {"no-embedding", BoolFlag(&Config::embedding, false)},
      {"layers", IntFlag(&Config::layers, 1, 256)},
      {"micro-batches", IntFlag(&Config::micro_batches, 1, 1024)},
      {"iterations", IntFlag(&Config::iterations, 1, 100000)},
      {"warmup", IntFlag(&Config::warmup, 0, 100000)},
      {"fwd-us", Int64Flag(&Config::fwd_us, 0, 10000000)},
      {"bwd-us", Int64Flag(&Config::bwd_us, 0, 10000000)},
      {"emb-fwd-us", Int64Flag(&Config::emb_fwd_us, 0, 10000000)},
      {"emb-bwd-us", Int64Flag(&Config::emb_bwd_us, 0, 10000000)},
      {"act-kb", Int64Flag(&Config::act_kb, 1, 1 << 20)},
      {"grad-kb", Int64Flag(&Config::grad_kb, 1, 1 << 20)},
      {"bucket-kb", Int64Flag(&Config::bucket_kb, 1, 1 << 22)},
      {"sparse-kb", Int64Flag(&Config::sparse_kb, 1, 1 << 20)},
      {"sparse-indices", IntFlag(&Config::sparse_indices, 1, 1 << 20)},
      {"rank", IntFlag(&Config::rank, 0, 1 << 20)},
      {"nranks", IntFlag(&Config::nranks, 1, 1 << 20)},
      {"timeout", IntFlag(&Config::timeout_s, 1, 86400)},
      {"lookahead", IntFlag(&Config::lookahead, 0, 1000)},
      {"reference", BoolFlag(&Config::reference_only, true)},
      {"help", BoolFlag(&Config::help, true)},
      {"uid-file", {true, [](const std::string& v, Config* c, std::string* accepted) {
                      if (v.empty()) {
                        *accepted = "a file path";
                        return false;
                      }
                      c->uid_file = v;
                      return true;
                    }}},
      {"schedule", {true, [](const std::string& v, Config* c, std::string* accepted) {
                      if (v == "1f1b") {
                        c->schedule = Schedule::k1F1B;
                      } else if (v == "2bw") {
                        c->schedule = Schedule::k2BW;
                      } else {
                        *accepted = "1f1b or 2bw";
                        return false;
                      }
                      return true;
                    }}},
      {"order", {true, [](const std::string& v, Config* c, std::string* accepted) {
                   if (v == "dp-inner") {
                     c->order = Order::kDpInner;
                   } else if (v == "pp-inner") {
                     c->order = Order::kPpInner;
                   } else {
                     *accepted = "dp-inner or pp-inner";
                     return false;
                   }
                   return true;
                 }}},
  };
  return *flags;
}

// Splits "--name=value" / "--name value"; returns false if args[i] is not a flag.
bool SplitFlag(const std::vector<std::string>& args, size_t i, std::string* name,
               std::string* value, bool* has_inline_value) {
  const std::string& a = args[i];
  if (a.size() < 3 || a.compare(0, 2, "--") != 0) return false;
  size_t eq = a.find('=');
  *has_inline_value = eq != std::string::npos;
  *name = a.substr(2, *has_inline_value ? eq - 2 : std::string::npos);
  *value = *has_inline_value ? a.substr(eq + 1) : "";
  return true;
}

bool EnvInt(const char* var, int* out, std::string* error) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return true;
  int64_t x;
  if (!ParseInt64(v, 0, 1 << 20, &x)) {
    *error = std::string(var) + "='" + v + "': expected " + Range(0, 1 << 20);
    return false;
  }
  *out = static_cast<int>(x);
  return true;
}

}  // namespace

std::vector<std::string> PresetNames() {
  return {"default", "tiny", "contention", "megatron", "sparse", "no-contention"};
}

bool ApplyPreset(const std::string& name, Config* c, std::string* error) {
  Config base;  // every preset starts from the defaults
  base.rank = c->rank;
  base.nranks = c->nranks;
  base.uid_file = c->uid_file;
  if (name == "default") {
  } else if (name == "tiny") {
    // Tests: every mechanism, little data, little time.
    base.layers = 2;
    base.micro_batches = 4;
    base.iterations = 4;
    base.warmup = 1;
    base.fwd_us = 50;
    base.bwd_us = 100;
    base.emb_fwd_us = 50;
    base.emb_bwd_us = 100;
    base.act_kb = 16;
    base.grad_kb = 32;
    base.bucket_kb = 64;
    base.sparse_kb = 8;
    base.sparse_indices = 32;
  } else if (name == "contention" || name == "megatron" || name == "sparse" ||
             name == "no-contention") {
    // 4 stages x 2 replicas (8 ranks, e.g. 4 hosts x 2). pp-inner puts two
    // consecutive stages of one replica on a host, so stage 1 -> 2 P2P and
    // every DP all-reduce cross the same host NIC. Sized for the test bed's
    // 300 Mbit/s uplinks (docs/performance.md): a host sends ~280 ms of
    // bytes per iteration against ~150 ms of compute per stage, so the links
    // set the pace; compute is a sleep on the streams, so 8 ranks fit on
    // two cores. Few, large messages (1 MiB per layer, 4 MiB buckets).
    base.stages = 4;
    base.replicas = 2;
    base.layers = 4;
    base.order = Order::kPpInner;
    base.micro_batches = 8;
    base.iterations = 10;
    base.warmup = 2;
    base.fwd_us = 1500;
    base.bwd_us = 3000;
    base.act_kb = 256;
    base.grad_kb = 1024;
    base.bucket_kb = 4096;
    base.schedule = name == "contention" ? Schedule::k2BW : Schedule::k1F1B;
    if (name == "sparse") {
      // Embedding stage in front of 3 dense stages: same rank count.
      base.stages = 3;
      base.embedding = true;
      base.sparse_kb = 256;
      base.sparse_indices = 1024;
      base.emb_fwd_us = 900;
      base.emb_bwd_us = 1800;
    }
    if (name == "no-contention") {
      // dp-inner: a host holds one stage of both replicas, so DP all-reduce
      // stays inside the host and only P2P crosses the NIC.
      base.order = Order::kDpInner;
      base.schedule = Schedule::k2BW;
    }
  } else {
    std::string names;
    for (const auto& n : PresetNames()) names += (names.empty() ? "" : ", ") + n;
    *error = "--preset '" + name + "': expected one of " + names;
    return false;
  }
  base.preset = name;
  *c = base;
  return true;
}

bool ParseArgs(const std::vector<std::string>& args, Config* config, std::string* error) {
  Config c;
  if (!EnvInt("RANK", &c.rank, error) || !EnvInt("WORLD_SIZE", &c.nranks, error)) return false;
  if (const char* f = std::getenv("RENDEZVOUS_FILE"); f != nullptr && *f != '\0') c.uid_file = f;

  // The preset first, wherever it is.
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name, value;
    bool inline_value;
    if (SplitFlag(args, i, &name, &value, &inline_value) && name == "preset") {
      if (!inline_value) {
        if (i + 1 >= args.size()) {
          *error = "--preset needs a value";
          return false;
        }
        value = args[i + 1];
      }
      if (!ApplyPreset(value, &c, error)) return false;
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name, value;
    bool inline_value;
    if (!SplitFlag(args, i, &name, &value, &inline_value)) {
      *error = "unexpected argument '" + args[i] + "' (flags are --name value; see --help)";
      return false;
    }
    if (name == "preset") {
      if (!inline_value) ++i;
      continue;
    }
    auto it = Flags().find(name);
    if (it == Flags().end()) {
      *error = "unknown flag '--" + name + "' (see --help)";
      return false;
    }
    if (it->second.takes_value && !inline_value) {
      if (i + 1 >= args.size()) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = args[++i];
    } else if (!it->second.takes_value && inline_value) {
      *error = "--" + name + " takes no value";
      return false;
    }
    std::string accepted;
    if (!it->second.apply(value, &c, &accepted)) {
      *error = "--" + name + " '" + value + "': expected " + accepted;
      return false;
    }
  }
  *config = c;
  return true;
}

bool ParseArgs(int argc, const char* const* argv, Config* config, std::string* error) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return ParseArgs(args, config, error);
}

bool ValidateModel(const Config& c, std::string* error) {
  if (c.warmup >= c.iterations) {
    *error = "--warmup " + std::to_string(c.warmup) + ": must be below --iterations (" +
             std::to_string(c.iterations) + ") so at least one iteration is timed";
    return false;
  }
  if (c.schedule == Schedule::k2BW && c.micro_batches < c.total_stages() - 1) {
    *error = "--micro-batches " + std::to_string(c.micro_batches) +
             ": the 2bw schedule needs at least stages - 1 = " +
             std::to_string(c.total_stages() - 1) + " micro-batches per iteration";
    return false;
  }
  // Integer-valued floats must stay exact: |weight| grows by <= 12 per
  // replica and iteration, embedding rows by <= 63 per replica and micro-batch.
  const double max_exact = 16777216.0;  // 2^24
  if (12.0 * c.replicas * c.iterations + 16 >= max_exact ||
      (c.embedding && 63.0 * c.replicas * c.iterations * c.micro_batches + 16 >= max_exact)) {
    *error = "--iterations/--replicas/--micro-batches too large for exact float sums";
    return false;
  }
  return true;
}

bool ValidateRun(const Config& c, std::string* error) {
  if (!ValidateModel(c, error)) return false;
  if (c.nranks < 0) {
    *error = "--nranks missing (or WORLD_SIZE): the number of processes";
    return false;
  }
  if (c.nranks != c.world_size()) {
    *error = "--nranks " + std::to_string(c.nranks) + ": this model needs (stages" +
             std::string(c.embedding ? " + 1 embedding" : "") + ") x replicas = " +
             std::to_string(c.total_stages()) + " x " + std::to_string(c.replicas) + " = " +
             std::to_string(c.world_size()) + " ranks";
    return false;
  }
  if (c.rank < 0 || c.rank >= c.nranks) {
    *error = "--rank " + std::to_string(c.rank) + " (or RANK): expected 0 to " +
             std::to_string(c.nranks - 1);
    return false;
  }
  if (c.uid_file.empty()) {
    *error = "--uid-file missing (or RENDEZVOUS_FILE): a fresh path that rank 0 writes the "
             "NCCL unique id to and the other ranks read";
    return false;
  }
  return true;
}

const char* ScheduleName(Schedule s) { return s == Schedule::k1F1B ? "1f1b" : "2bw"; }
const char* OrderName(Order o) { return o == Order::kDpInner ? "dp-inner" : "pp-inner"; }

nlohmann::ordered_json ConfigJson(const Config& c) {
  return {{"preset", c.preset},
          {"stages", c.stages},
          {"replicas", c.replicas},
          {"embedding", c.embedding},
          {"layers", c.layers},
          {"schedule", ScheduleName(c.schedule)},
          {"order", OrderName(c.order)},
          {"micro_batches", c.micro_batches},
          {"iterations", c.iterations},
          {"warmup", c.warmup},
          {"fwd_us", c.fwd_us},
          {"bwd_us", c.bwd_us},
          {"emb_fwd_us", c.emb_fwd_us},
          {"emb_bwd_us", c.emb_bwd_us},
          {"act_kb", c.act_kb},
          {"grad_kb", c.grad_kb},
          {"bucket_kb", c.bucket_kb},
          {"sparse_kb", c.sparse_kb},
          {"sparse_indices", c.sparse_indices},
          {"lookahead", c.lookahead}};
}

std::string Usage() {
  std::ostringstream s;
  s << "usage: hybrid_parallel [flags]\n"
       "A hybrid-parallel (pipeline x data parallel) training loop on NCCL with\n"
       "emulated compute. Prints one line: RESULT {json}.\n\n"
       "model\n"
       "  --preset NAME          ";
  for (const auto& n : PresetNames()) s << n << " ";
  s << "(applied first)\n"
       "  --stages S             dense pipeline stages (2)\n"
       "  --replicas D           data-parallel replicas (2)\n"
       "  --embedding            an embedding stage in front: AllGather + AlltoAll (SPARSE)\n"
       "  --layers L             layers per dense stage (4)\n"
       "  --schedule 1f1b|2bw    1F1B with flush, or PipeDream-2BW-style without (1f1b)\n"
       "  --order dp-inner|pp-inner  rank = stage*D + replica, or replica*S + stage (dp-inner)\n"
       "  --micro-batches M      per iteration (4)\n"
       "  --iterations N         total, warm-up included (6)\n"
       "  --warmup W             iterations left out of the median (2)\n"
       "  --fwd-us / --bwd-us    compute per dense layer and micro-batch (200 / 400)\n"
       "  --emb-fwd-us / --emb-bwd-us  embedding compute per micro-batch (100 / 200)\n"
       "  --act-kb               P2P activation per micro-batch (64)\n"
       "  --grad-kb              DENSE gradient per layer (256)\n"
       "  --bucket-kb            DDP bucket cap (1024)\n"
       "  --sparse-kb            SPARSE AlltoAll rows per peer per micro-batch (32)\n"
       "  --sparse-indices K     AllGather row ids per rank per micro-batch (256)\n"
       "process\n"
       "  --rank R               this process's rank (default: $RANK)\n"
       "  --nranks N             processes, = (stages + embedding) x replicas ($WORLD_SIZE)\n"
       "  --uid-file PATH        rank 0 writes the NCCL unique id there, the others\n"
       "                         wait for it; must not exist yet ($RENDEZVOUS_FILE)\n"
       "  --timeout SEC          exit 124 if still running after this (300)\n"
       "  --lookahead K          iterations the host may issue ahead of completion (1)\n"
       "  --reference            print the expected checksum (no NCCL) and exit\n";
  return s.str();
}

}  // namespace hybrid
