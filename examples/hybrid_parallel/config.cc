#include "config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "CLI/CLI.hpp"

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

// How a flag applies its value: false (with what is accepted) if it cannot.
using Apply = std::function<bool(const std::string& value, Config* c, std::string* accepted)>;

// One flag of the table: its name (without the dashes), its group and value
// name in the help, what it does, and how it applies a value; or, for an
// on/off flag, the field it sets and the name that clears it.
struct Flag {
  std::string name;
  const char* group;
  std::string value_name;  // "" for an on/off flag
  std::string help;
  Apply apply;
  std::string default_text;        // shown in the help; "" for none
  bool Config::*toggle = nullptr;  // an on/off flag's field
  std::string off_name;            // "" or the name that sets it to false
};

Flag ValueFlag(const char* name, const char* group, std::string value_name, const char* help, Apply apply,
               std::string default_text = "") {
  return {name, group, std::move(value_name), help, std::move(apply), std::move(default_text), nullptr, ""};
}

// An integer field (int or int64_t) within [min, max].
template <typename T>
Flag IntFlag(const char* name, const char* group, const char* value_name, T Config::*field, int64_t min,
             int64_t max, const char* help) {
  Apply apply = [=](const std::string& v, Config* c, std::string* accepted) {
    int64_t x;
    if (!ParseInt64(v, min, max, &x)) {
      *accepted = Range(min, max);
      return false;
    }
    c->*field = static_cast<T>(x);
    return true;
  };
  return ValueFlag(name, group, value_name, help, std::move(apply), std::to_string(Config{}.*field));
}

Flag OnOffFlag(const char* name, const char* off_name, const char* group, bool Config::*field,
               const char* help) {
  return {name, group, "", help, nullptr, "", field, off_name};
}

// A field with one of two values.
template <typename E>
Flag ChoiceFlag(const char* name, const char* group, E Config::*field, const char* a, E a_value, const char* b,
                E b_value, const char* help) {
  const std::string accepted_text = std::string(a) + " or " + b;
  Apply apply = [=](const std::string& v, Config* c, std::string* accepted) {
    if (v != a && v != b) {
      *accepted = accepted_text;
      return false;
    }
    c->*field = v == a ? a_value : b_value;
    return true;
  };
  return ValueFlag(name, group, std::string(a) + "|" + b, help, std::move(apply),
                   Config{}.*field == a_value ? a : b);
}

Flag WithoutDefault(Flag flag) {
  flag.default_text.clear();
  return flag;
}

// The flags after --preset, in the order of the help. The process identity
// defaults to the launcher's environment (ParseArgs), not to a value here.
const std::vector<Flag>& Flags() {
  static const auto* flags = new std::vector<Flag>{
      IntFlag("stages", "model", "S", &Config::stages, 1, 64, "dense pipeline stages"),
      IntFlag("replicas", "model", "D", &Config::replicas, 1, 256, "data-parallel replicas"),
      OnOffFlag("embedding", "no-embedding", "model", &Config::embedding,
                "an embedding stage in front: AllGather + AlltoAll (SPARSE)"),
      IntFlag("layers", "model", "L", &Config::layers, 1, 256, "layers per dense stage"),
      ChoiceFlag("schedule", "model", &Config::schedule, "1f1b", Schedule::k1F1B, "2bw", Schedule::k2BW,
                 "1F1B with flush, or PipeDream-2BW-style without"),
      ChoiceFlag("order", "model", &Config::order, "dp-inner", Order::kDpInner, "pp-inner", Order::kPpInner,
                 "rank = stage*D + replica, or replica*S + stage"),
      IntFlag("micro-batches", "model", "M", &Config::micro_batches, 1, 1024, "micro-batches per iteration"),
      IntFlag("iterations", "model", "N", &Config::iterations, 1, 100000, "iterations, warm-up included"),
      IntFlag("warmup", "model", "W", &Config::warmup, 0, 100000, "iterations left out of the median"),
      IntFlag("fwd-us", "model", "US", &Config::fwd_us, 0, 10000000,
              "forward compute per dense layer and micro-batch"),
      IntFlag("bwd-us", "model", "US", &Config::bwd_us, 0, 10000000,
              "backward compute per dense layer and micro-batch"),
      IntFlag("emb-fwd-us", "model", "US", &Config::emb_fwd_us, 0, 10000000,
              "embedding forward compute per micro-batch"),
      IntFlag("emb-bwd-us", "model", "US", &Config::emb_bwd_us, 0, 10000000,
              "embedding backward compute per micro-batch"),
      IntFlag("act-kb", "model", "KB", &Config::act_kb, 1, 1 << 20, "P2P activation per micro-batch"),
      IntFlag("grad-kb", "model", "KB", &Config::grad_kb, 1, 1 << 20, "DENSE gradient per layer"),
      IntFlag("bucket-kb", "model", "KB", &Config::bucket_kb, 1, 1 << 22, "DDP bucket cap"),
      IntFlag("sparse-kb", "model", "KB", &Config::sparse_kb, 1, 1 << 20,
              "SPARSE AlltoAll rows per peer per micro-batch"),
      IntFlag("sparse-indices", "model", "K", &Config::sparse_indices, 1, 1 << 20,
              "AllGather row ids per rank per micro-batch"),
      WithoutDefault(IntFlag("rank", "process", "R", &Config::rank, 0, 1 << 20,
                             "this process's rank (default: $RANK)")),
      WithoutDefault(IntFlag("nranks", "process", "N", &Config::nranks, 1, 1 << 20,
                             "processes, = (stages + embedding) x replicas (default: $WORLD_SIZE)")),
      ValueFlag("uid-file", "process", "PATH",
                "a fresh path for the NCCL unique id: rank 0 writes it, the others wait for it "
                "(default: $RENDEZVOUS_FILE)",
                [](const std::string& v, Config* c, std::string* accepted) {
                  if (v.empty()) {
                    *accepted = "a file path";
                    return false;
                  }
                  c->uid_file = v;
                  return true;
                }),
      IntFlag("timeout", "process", "SEC", &Config::timeout_s, 1, 86400, "exit 124 if still running after this"),
      IntFlag("lookahead", "process", "K", &Config::lookahead, 0, 1000,
              "iterations the host may issue ahead of completion"),
      OnOffFlag("reference", "", "process", &Config::reference_only,
                "print the expected checksum (no NCCL) and exit"),
  };
  return *flags;
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

// Throws the error ParseArgs reports as it is.
[[noreturn]] void Reject(const std::string& message) {
  throw CLI::ValidationError(message, CLI::ExitCodes::ValidationError);
}

// The command line: --preset, then the table. CLI11 runs the flags'
// callbacks in this order once every argument is read, so the preset is
// applied first wherever it appears and the other flags override it.
void AddFlags(CLI::App* app, Config* c) {
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last value counts
  std::string presets;
  for (const auto& n : PresetNames()) presets += (presets.empty() ? "" : ", ") + n;
  app->add_option_function<std::string>(
         "--preset",
         [c](const std::string& name) {
           std::string error;
           if (!ApplyPreset(name, c, &error)) Reject(error);
         },
         "applied first, the other flags change it: " + presets)
      ->type_name("NAME")
      ->default_str(Config{}.preset)
      ->group("model");
  for (const Flag& flag : Flags()) {
    const std::string dashed = "--" + flag.name;
    CLI::Option* opt;
    if (flag.toggle != nullptr) {
      const std::string names = flag.off_name.empty() ? dashed : dashed + ",!--" + flag.off_name;
      opt = app->add_flag(names, c->*flag.toggle, flag.help)->disable_flag_override();
    } else {
      opt = app->add_option_function<std::string>(
                   dashed,
                   [c, &flag, dashed](const std::string& value) {
                     std::string accepted;
                     if (!flag.apply(value, c, &accepted)) {
                       Reject(dashed + " '" + value + "': expected " + accepted);
                     }
                   },
                   flag.help)
                ->type_name(flag.value_name)
                ->default_str(flag.default_text);
    }
    opt->group(flag.group);
  }
  app->set_help_flag("-h,--help", "print this help and exit")->group("process");
}

// CLI11's complaint in this parser's words: unknown flags and arguments by
// name, a flag without its value, a value given to a flag that takes none.
std::string Explain(const CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && app.remaining_size() > 0) {
    const std::string arg = app.remaining().front();
    if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      return "unknown flag '" + arg.substr(0, arg.find('=')) + "' (see --help)";
    }
    return "unexpected argument '" + arg + "' (flags are --name value; see --help)";
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    // "--layers: 1 required TEXT missing", "embedding was given a disallowed flag override"
    std::string name = what.substr(0, what.find_first_of(": "));
    if (name.compare(0, 2, "--") != 0) name = "--" + name;
    if (what.find(" required ") != std::string::npos) return name + " needs a value";
    if (what.find("flag override") != std::string::npos) return name + " takes no value";
  }
  return what;
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

  CLI::App app;
  AddFlags(&app, &c);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    c.help = true;
  } catch (const CLI::ParseError& e) {
    *error = Explain(app, e);
    return false;
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
  Config c;
  CLI::App app("A hybrid-parallel (pipeline x data parallel) training loop on NCCL with emulated compute.\n"
               "Prints one line: RESULT {json}.",
               "hybrid_parallel");
  AddFlags(&app, &c);
  app.footer("Exit codes: 0 done, 1 a run-time error, 2 bad flags, 3 no host-stream API in the loaded\n"
             "libnccl.so.2, 124 the --timeout watchdog fired.");
  return app.help();
}

}  // namespace hybrid
