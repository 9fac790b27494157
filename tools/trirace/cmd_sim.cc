// trirace sim: a workload on a simulated cluster in every mode, next to the
// ideal and the bound (docs/simulation.md; sim/).
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster_flags.h"
#include "commands.h"
#include "config.h"
#include "sim/cluster/cluster.h"
#include "sim/run/compare.h"
#include "sim/run/trace_out.h"
#include "sim/workloads/collective.h"
#include "sim/workloads/hybrid_example.h"
#include "sim/workloads/jobs.h"
#include "sim/workloads/replay.h"
#include "sim/workloads/transformer.h"
#include "sim_report.h"

namespace trirace::tools {
namespace {

struct SimFlags : ClusterFlags {
  std::string decide_at = "call";
  std::optional<std::string> modes;  // unset: the six (a collective: off)
  bool json = false, timing = false;
  std::string trace, trace_mode;
  // Workloads.
  std::string preset;
  std::vector<std::string> preset_flags;
  std::string model;
  sim::TrainingSpec training;
  std::string schedule = "1f1b";
  std::string order = "dp-inner";
  double tflops = 0, mem_gbps = 0;
  std::string replay;
  std::string collective;
  uint64_t bytes = 0;
  std::optional<int> ranks;  // unset: all
};

double PeakRssMib() {
  rusage u{};
  return getrusage(RUSAGE_SELF, &u) == 0 ? double(u.ru_maxrss) / 1024 : 0;  // ru_maxrss is in KiB
}

int Usage(const std::string& why) {
  std::fprintf(stderr, "trirace sim: %s (see trirace sim --help)\n", why.c_str());
  return kExitUsage;
}

absl::StatusOr<std::vector<sim::Mode>> ParseModes(const std::string& text) {
  std::vector<sim::Mode> out;
  std::vector<std::string> names;
  for (sim::Mode m : sim::AllModes()) names.emplace_back(sim::ModeName(m));
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::optional<sim::Mode> m = sim::ModeFromName(std::string_view(part.data(), part.size()));
    if (!m) {
      return absl::InvalidArgumentError(absl::StrCat("--modes: '", part, "' is not a mode; expected a comma list of ",
                                                     absl::StrJoin(names, ", ")));
    }
    out.push_back(*m);
  }
  return out;
}

// Flags that only --model reads, and those only --collective reads.
constexpr const char* kModelFlags[] = {"--pp",       "--dp",        "--tp",         "--order",    "--schedule",
                                       "--microbatches", "--micro-batch-size", "--chunks", "--bucket-mb",
                                       "--moe-every", "--iterations", "--warmup",     "--tflops",   "--mem-gbps"};
constexpr const char* kCollectiveFlags[] = {"--bytes", "--ranks"};

int RunSim(SimFlags& f, const CLI::App& app) {
  const int picked = int(!f.preset.empty()) + int(!f.model.empty()) + int(!f.replay.empty()) + int(!f.collective.empty());
  if (picked != 1) return Usage("give exactly one workload: --preset, --model, --replay or --collective");
  const char* workload_flag = !f.preset.empty() ? "--preset" : !f.replay.empty() ? "--replay" : "--collective";
  if (f.model.empty()) {
    for (const char* flag : kModelFlags) {
      if (app.count(flag) > 0) {
        return Usage(absl::StrCat(flag, " goes with --model; ", workload_flag, " does not read it",
                                  f.preset.empty() ? "" : " (give examples/hybrid_parallel's own flags after --)"));
      }
    }
  }
  if (f.collective.empty()) {
    for (const char* flag : kCollectiveFlags) {
      if (app.count(flag) > 0) return Usage(absl::StrCat(flag, " goes with --collective"));
    }
  }
  if (!f.preset.empty() && !sim::IsRailsPreset(f.preset)) {
    std::vector<std::string> names = hybrid::PresetNames();
    names.insert(names.end(), {"rails-split", "rails-shared"});
    if (std::find(names.begin(), names.end(), f.preset) == names.end()) {
      return Usage(absl::StrCat("--preset '", f.preset, "': expected one of ", absl::StrJoin(names, ", ")));
    }
  }
  if (!f.preset_flags.empty() && f.preset.empty()) return Usage("flags after -- go with --preset only");
  if (absl::Status s = ResolveClusterFlags(&f); !s.ok()) return Usage(std::string(s.message()));
  const std::string mode_list =
      f.modes ? *f.modes : (f.collective.empty() ? "off,fifo,priority,wire,gate,trirace" : "off");
  absl::StatusOr<std::vector<sim::Mode>> modes = ParseModes(mode_list);
  if (!modes.ok()) return Usage(std::string(modes.status().message()));
  std::optional<sim::Mode> trace_mode;
  if (!f.collective.empty() && modes->size() != 1) {
    return Usage("--modes: --collective runs one mode (off unless --modes names another)");
  }
  if (!f.collective.empty() && !f.trace_mode.empty()) {
    return Usage("--trace-mode: --collective traces the one mode it runs");
  }
  if (!f.trace.empty()) {
    trace_mode = f.trace_mode.empty() ? std::optional<sim::Mode>(modes->back()) : sim::ModeFromName(f.trace_mode);
    if (!trace_mode) {
      std::vector<std::string> names;
      for (sim::Mode m : sim::AllModes()) names.emplace_back(sim::ModeName(m));
      return Usage("--trace-mode '" + f.trace_mode + "': expected one of " + absl::StrJoin(names, ", "));
    }
    if (std::find(modes->begin(), modes->end(), *trace_mode) == modes->end() && *trace_mode != sim::Mode::kIdeal) {
      modes->push_back(*trace_mode);
    }
  }
  if (sim::IsRailsPreset(f.preset) && f.cluster_options.nics == 0 && f.cluster == "testbed") f.cluster_options.nics = 2;
  if (f.decide_at != "call" && f.decide_at != "stream") return Usage("--decide-at '" + f.decide_at + "': expected call or stream");
  sim::SimOptions base;
  base.decide_at_stream = f.decide_at == "stream";
  absl::StatusOr<sim::Cluster> cluster = MakeFlaggedCluster(f, f.cluster_options);
  if (!cluster.ok()) return Usage(std::string(cluster.status().message()));
  if (!f.hosts) {
    // No --hosts: as many as the workload's layout fills.
    std::optional<int64_t> needed;
    if (!f.preset.empty() && !sim::IsRailsPreset(f.preset)) {
      hybrid::Config c;
      std::string error;
      std::vector<std::string> args = {"--preset", f.preset};
      args.insert(args.end(), f.preset_flags.begin(), f.preset_flags.end());
      if (hybrid::ParseArgs(args, &c, &error)) needed = c.world_size();
    } else if (!f.model.empty() && f.training.pp > 0 && f.training.dp > 0 && f.training.tp > 0) {
      needed = int64_t(f.training.pp) * f.training.dp * f.training.tp;
    }
    if (needed && *needed > kMaxRanks) {
      return Usage(absl::StrCat("the workload has ", *needed, " ranks; the simulator takes at most ", kMaxRanks,
                                " (memory grows by about 0.2 MiB a rank)"));
    }
    if (needed && *needed != cluster->ranks() && *needed % cluster->ranks_per_host == 0) {
      f.cluster_options.hosts = int(*needed / cluster->ranks_per_host);
      cluster = MakeFlaggedCluster(f, f.cluster_options);
      if (!cluster.ok()) return Usage(std::string(cluster.status().message()));
    }
  }

  absl::StatusOr<sim::Workload> workload = absl::UnknownError("no workload");
  if (sim::IsRailsPreset(f.preset)) {
    workload = sim::RailsPreset(f.preset, f.preset_flags, &*cluster);
    if (!workload.ok()) return Usage(std::string(workload.status().message()));
  } else if (!f.preset.empty()) {
    hybrid::Config c;
    std::string error;
    std::vector<std::string> args = {"--preset", f.preset};
    args.insert(args.end(), f.preset_flags.begin(), f.preset_flags.end());
    if (!hybrid::ParseArgs(args, &c, &error)) return Usage(error);
    if (c.world_size() != cluster->ranks()) {
      return Usage(absl::StrCat("--preset ", f.preset, " runs ", c.world_size(), " ranks but cluster ", cluster->name,
                                " has ", cluster->ranks(), " (", cluster->hosts(), " hosts x ",
                                cluster->ranks_per_host, "); set --hosts / --ranks-per-host"));
    }
    workload = sim::HybridExampleWorkload(c);
  } else if (!f.model.empty()) {
    std::optional<sim::ModelSpec> model = sim::BuiltinModel(f.model);
    if (!model) {
      return Usage(absl::StrCat("--model '", f.model, "': expected one of ", absl::StrJoin(sim::BuiltinModelNames(), ", ")));
    }
    std::optional<sim::PipelineSchedule> schedule = sim::PipelineScheduleFromName(f.schedule);
    if (!schedule) return Usage("--schedule '" + f.schedule + "': expected 1f1b, interleaved, 2bw or gpipe");
    if (f.order != "dp-inner" && f.order != "pp-inner") return Usage("--order '" + f.order + "': expected dp-inner or pp-inner");
    f.training.pp_inner = f.order == "pp-inner";
    f.training.model = *model;
    f.training.schedule = *schedule;
    f.training.gpu = sim::DefaultGpuProfile(cluster->name);
    if (f.tflops > 0) f.training.gpu.tflops = f.tflops;
    if (f.mem_gbps > 0) f.training.gpu.mem_gbytes_per_s = f.mem_gbps;
    if (absl::Status s = sim::ValidateTraining(f.training, *cluster); !s.ok()) return Usage(std::string(s.message()));
    workload = sim::TransformerWorkload(f.training, *cluster);
  } else if (!f.replay.empty()) {
    sim::ReplayStats replay;
    workload = sim::ReplayWorkload(f.replay, &replay);
    if (!workload.ok()) return Usage(std::string(workload.status().message()));
    std::fputs(ReplayLine("trirace sim", replay).c_str(), stderr);
    absl::StatusOr<sim::Cluster> sized =
        MakeReplayCluster(f, f.cluster_options, int(workload->ranks.size()), f.hosts.has_value());
    if (!sized.ok()) return Usage(absl::StrCat("--replay ", f.replay, ": ", sized.status().message()));
    *cluster = *std::move(sized);
  } else {
    std::optional<NcclFunc> func = sim::CollectiveFromName(f.collective);
    if (!func) {
      return Usage("--collective '" + f.collective + "': expected allreduce, allgather, reducescatter, alltoall or sendrecv");
    }
    if (f.ranks && *f.ranks < 2) return Usage(absl::StrCat("--ranks ", *f.ranks, ": expected 2 or more"));
    sim::CollectiveSpec spec{*func, f.bytes, f.ranks ? *f.ranks : cluster->ranks(), 1};
    if (spec.ranks > cluster->ranks()) {
      return Usage(absl::StrCat("--ranks ", spec.ranks, ": cluster ", cluster->name, " has ", cluster->ranks()));
    }
    workload = sim::CollectiveWorkload(spec);
    if (!workload.ok()) return Usage(std::string(workload.status().message()));
    sim::TraceOut trace;
    sim::SimOptions o;
    o.mode = modes->front();
    o.decide_at_stream = base.decide_at_stream;
    if (!f.trace.empty()) o.trace = &trace;
    absl::StatusOr<sim::ModeResult> r = sim::Simulate(*cluster, *workload, o);
    if (!r.ok()) {
      std::fprintf(stderr, "trirace sim: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    if (!f.trace.empty()) {
      if (absl::Status s = trace.Write(f.trace, *workload); !s.ok()) return Usage(std::string(s.message()));
    }
    std::fputs(
        SimCollectiveReport(*cluster, *workload, *r, *func, f.bytes, spec.ranks, {f.json, f.timing, PeakRssMib()}).c_str(),
        stdout);
    return 0;
  }
  if (!workload.ok()) return Usage(std::string(workload.status().message()));
  sim::TraceOut trace;
  absl::StatusOr<sim::Comparison> c =
      sim::CompareModes(*cluster, *workload, *modes, base, f.trace.empty() ? nullptr : &trace, trace_mode);
  if (!c.ok()) {
    std::fprintf(stderr, "trirace sim: %s\n", std::string(c.status().message()).c_str());
    return 1;
  }
  if (!f.trace.empty()) {
    if (absl::Status s = trace.Write(f.trace, *workload); !s.ok()) return Usage(std::string(s.message()));
  }
  std::fputs(SimWorkloadReport(*cluster, *workload, *c, {f.json, f.timing, PeakRssMib()}).c_str(), stdout);
  return 0;
}

}  // namespace

Command AddSimCommand(CLI::App& trirace) {
  auto f = std::make_shared<SimFlags>();
  CLI::App* app = trirace.add_subcommand(
      "sim", "a workload on a simulated cluster in every mode, with the real scheduler (docs/simulation.md)");
  app->footer(
      "Simulates a workload on a cluster in every mode, with the real scheduler in simulated time: iteration\n"
      "time, speed-up against off, share of the possible gain, busiest links; the ideal and the bound beside them.\n"
      "  trirace sim --cluster NAME|FILE [--hosts N] [--gbps G] [--qos none|host|fabric] [--modes off,trirace,...]\n"
      "              [--json] [--trace FILE]\n"
      "              ( --preset NAME [-- <hybrid_parallel flags>]\n"
      "              | --model NAME --pp P --dp D [--tp T] --schedule 1f1b|interleaved|2bw|gpipe --microbatches M\n"
      "              | --replay TRACE_DIR\n"
      "              | --collective allreduce|allgather|reducescatter|alltoall|sendrecv --bytes N [--ranks N] )\n"
      "TRIRACE_* variables configure the simulated engines as they configure the shim's.");
  AddClusterFlags(app, f.get());
  app->add_option("--modes", f->modes,
                  "comma list of off, fifo, priority, wire, gate, trirace, ideal (default: the first six; "
                  "--collective: off)")
      ->type_name("LIST");
  app->add_flag("--json", f->json, "print one JSON object");
  app->add_flag("--timing", f->timing, "add the simulator's own events and wall time");
  app->add_option("--trace", f->trace, "write a Perfetto trace of one mode's run (a file per rank where FILE has %r)")
      ->type_name("FILE");
  app->add_option("--trace-mode", f->trace_mode, "the mode --trace records (default: the last of --modes)")
      ->type_name("MODE");
  app->add_option("--preset", f->preset,
                  absl::StrCat("a bench/e2e preset of examples/hybrid_parallel (",
                               absl::StrJoin(hybrid::PresetNames(), ", "),
                               ") or two jobs on the 2-rail test bed (rails-split, rails-shared)"))
      ->type_name("NAME");
  app->add_option("--model", f->model, "bert-large, gpt2-xl, gpt-1.3b or gpt-7b")->type_name("NAME");
  app->add_option("--pp", f->training.pp, "pipeline stages")->type_name("P");
  app->add_option("--dp", f->training.dp, "data-parallel replicas")->type_name("D");
  app->add_option("--tp", f->training.tp, "tensor-parallel ranks, inside a node")->type_name("T");
  app->add_option("--order", f->order, "rank order: dp-inner (Megatron-LM's) or pp-inner (a replica's stages adjacent)")
      ->type_name("ORDER")
      ->capture_default_str();
  app->add_option("--schedule", f->schedule, "1f1b, interleaved, 2bw or gpipe")->type_name("S")->capture_default_str();
  app->add_option("--microbatches", f->training.microbatches, "micro-batches per iteration")
      ->type_name("M")
      ->capture_default_str();
  app->add_option("--micro-batch-size", f->training.micro_batch_size, "sequences per micro-batch")
      ->type_name("B")
      ->capture_default_str();
  app->add_option("--chunks", f->training.chunks, "interleaved: model chunks per stage")->type_name("V")->capture_default_str();
  app->add_option("--bucket-mb", f->training.bucket_mb, "DDP bucket cap, MiB")->type_name("MB")->capture_default_str();
  app->add_option("--moe-every", f->training.moe_every, "every K-th layer is an all-to-all MoE layer (0: none)")
      ->type_name("K");
  app->add_option("--iterations", f->training.iterations, "simulated iterations")->type_name("N")->capture_default_str();
  app->add_option("--warmup", f->training.warmup, "iterations left out of the median")->type_name("N")->capture_default_str();
  app->add_option("--tflops", f->tflops, "achieved TFLOP/s per GPU (default: the cluster's GPU)")->type_name("T");
  app->add_option("--mem-gbps", f->mem_gbps, "achieved memory GB/s per GPU (default: the cluster's GPU)")->type_name("G");
  app->add_option("--decide-at", f->decide_at,
                  "gated modes: submit tasks at the call (as the shim does) or when the stream reaches the gate "
                  "(a design under study)")
      ->type_name("call|stream")
      ->capture_default_str();
  app->add_option("--replay", f->replay, "a folder of the shim's per-rank traces (TRIRACE_TRACE)")->type_name("DIR");
  app->add_option("--collective", f->collective, "allreduce, allgather, reducescatter, alltoall or sendrecv")
      ->type_name("NAME");
  app->add_option("--bytes", f->bytes, "the collective's size, as nccl-tests counts it")->type_name("N");
  app->add_option("--ranks", f->ranks, "the collective's ranks (default: all)")->type_name("N");
  app->add_option("flags", f->preset_flags, "hybrid_parallel flags for --preset, after --")->type_name("");
  return {app, [f, app] { return RunSim(*f, *app); }};
}

}  // namespace trirace::tools
