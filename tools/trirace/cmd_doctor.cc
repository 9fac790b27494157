// trirace doctor: what TriRace will do on this node, before the job starts
// (doctor.h does the checks; this file prints them).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "commands.h"
#include "common/net_interfaces.h"
#include "common/params.h"
#include "common/qdisc.h"
#include "doctor.h"
#include "interpose/real_nccl.h"
#include "nlohmann/json.hpp"

namespace trirace::tools {
namespace {

const char* Mark(bool ok) { return ok ? "ok  " : "FAIL"; }

std::string ModeName(ShimMode m) { return std::string(kShimModeTexts[static_cast<int>(m)]); }

std::string NcclText(const DoctorReport& r) {
  if (!r.nccl_found) return r.nccl_error;
  return absl::StrCat("NCCL ", interpose::NcclVersionText(r.nccl_version), " at ", r.nccl_path, " (", r.nccl_how,
                      ")");
}

void PrintText(const DoctorReport& r, const std::string& prefix) {
  auto line = [&](const char* mark, const std::string& what, const std::string& text) {
    std::printf("%s%s %-10s %s\n", prefix.c_str(), mark, what.c_str(), text.c_str());
  };
  line(Mark(r.shim_loads), "shim", r.shim_loads ? absl::StrCat(r.shim_path, " loads") : r.shim_error);
  line(r.shim_preloaded ? "ok  " : "note", "preload",
       r.shim_preloaded ? "this process has it in LD_PRELOAD"
                        : "not in LD_PRELOAD here: start jobs with `trirace run -- CMD` or LD_PRELOAD=" +
                              (r.shim_path.empty() ? std::string("libtrirace.so") : r.shim_path));
  line(Mark(r.nccl_found), "nccl", NcclText(r));
  line(r.device_ok ? "ok  " : "note", "device", r.device_ok ? absl::StrCat(r.device, " backend") : r.device);
  for (const std::string& n : r.nics) line("    ", "nic", n);
  for (const std::string& g : r.gpus) line("    ", "gpu", g);
  if (r.gpus.empty()) line("    ", "gpu", "none found");
  for (const std::string& n : r.topology_notes) line("    ", "topology", n);
  line("    ", "interface", r.nic + " (this process's, for occupancy)");
  line(Mark(r.net_ok), "net", r.net);
  line(r.occupancy_readable ? "ok  " : "note", "occupancy", r.occupancy);
  for (const auto& [role, cls] : r.role_classes) {
    line("    ", "class", absl::StrCat(role, ": ", cls, r.classes_applied ? "" : " (not applied in this mode)"));
  }
  line("    ", "wire", r.wire_class_priority ? "the net plugin's class priority is on"
                                              : "the net plugin's class priority is off");
  line("    ", "order", "class order: " + r.class_order);
  if (!r.class_order_note.empty()) line("note", "order", r.class_order_note);
  const bool runs = RequestedModeRuns(r);
  line(Mark(runs), "verdict", interpose::VerdictLine(r.verdict, r.nranks));
  if (!runs && !r.shim_loads && r.verdict.mode == r.verdict.requested) {
    line("    ", "fix", "the shim does not load: " + r.shim_error);
  }
}

// The class-mark finding for a `tc qdisc show` dump of another node: its
// devices as the TCP transport would pick them there.
absl::StatusOr<MarksFinding> JudgeQdiscFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--qdiscs ", path, ": cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<QdiscEntry>> qdiscs = ParseTcQdiscShow(text.str());
  if (!qdiscs.ok()) return absl::InvalidArgumentError(absl::StrCat("--qdiscs ", path, ": ", qdiscs.status().message()));
  std::vector<NetInterface> devices;
  for (const QdiscEntry& q : *qdiscs) {
    if (std::any_of(devices.begin(), devices.end(), [&](const NetInterface& n) { return n.name == q.dev; })) continue;
    NetInterface n;
    n.name = q.dev;
    n.up = true;
    n.loopback = q.dev == "lo";
    devices.push_back(n);
  }
  std::vector<std::string> names;
  for (const NetInterface& n : SelectTransportInterfaces(devices, InterfaceSpec::Parse(InterfaceSpecText()))) {
    names.push_back(n.name);
  }
  return JudgeMarks(names, *qdiscs);
}

nlohmann::json ToJson(const DoctorReport& r) {
  nlohmann::json roles = nlohmann::json::object();
  for (const auto& [role, cls] : r.role_classes) roles[role] = cls;
  return {
      {"shim", {{"path", r.shim_path}, {"loads", r.shim_loads}, {"error", r.shim_error},
                {"preloaded", r.shim_preloaded}}},
      {"nccl", {{"found", r.nccl_found}, {"path", r.nccl_path}, {"how", r.nccl_how}, {"error", r.nccl_error},
                {"version", r.nccl_found ? interpose::NcclVersionText(r.nccl_version) : ""}}},
      {"device", {{"ok", r.device_ok}, {"text", r.device}}},
      {"topology", {{"nics", r.nics}, {"gpus", r.gpus}, {"notes", r.topology_notes}, {"interface", r.nic}}},
      {"net", {{"ok", r.net_ok}, {"text", r.net}}},
      {"occupancy", {{"readable", r.occupancy_readable}, {"text", r.occupancy}}},
      {"traffic_class", {{"roles", roles}, {"applied", r.classes_applied},
                         {"wire_class_priority", r.wire_class_priority}}},
      {"class_order", {{"text", r.class_order}, {"note", r.class_order_note}}},
      {"verdict", {{"requested", ModeName(r.verdict.requested)}, {"mode", ModeName(r.verdict.mode)},
                   {"why", r.verdict.why}, {"fix", r.verdict.fix}, {"runs", RequestedModeRuns(r)},
                   {"line", interpose::VerdictLine(r.verdict, r.nranks)}}},
  };
}

}  // namespace

Command AddDoctorCommand(CLI::App& trirace) {
  struct State {
    bool json = false;
    std::optional<int> rank;
    std::string qdiscs;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = trirace.add_subcommand("doctor", "what TriRace will do on this node: the shim, NCCL, GPUs, NICs, "
                                                   "net, occupancy, the mode a job gets and why");
  cmd->add_flag("--json", state->json, "print the report as JSON, for scripts");
  // The rank only labels the report; a launcher's rank is an int from 0 up.
  // CLI11's NonNegativeNumber would name its bound, the largest double.
  cmd->add_option_function<std::string>(
         "--rank",
         [state](const std::string& value) {
           int rank = -1;
           if (!absl::SimpleAtoi(value, &rank) || rank < 0) {
             RejectValue(absl::StrCat("--rank \"", value, "\" is not valid: expected an integer from 0 to ",
                                      std::numeric_limits<int>::max()));
           }
           state->rank = rank;
         },
         "label the report with this rank, 0 or more (run inside each launched rank: "
         "srun trirace doctor --rank $SLURM_PROCID)")
      ->type_name("N");
  cmd->add_option("--qdiscs", state->qdiscs,
                  "judge the class marks by this `tc qdisc show` dump (from a compute node) instead of this "
                  "host's qdiscs")
      ->type_name("FILE");
  cmd->footer(
      "Checks, with the shim's own rules: whether libtrirace.so loads here (every library it needs\n"
      "is found), the libnccl.so.2 a job would load (TRIRACE_NCCL_LIBRARY, else the loader's search)\n"
      "and its version, the device backend, this host's NICs, rails and GPU-NIC affinity, the net\n"
      "transport `trirace run` keeps or sets, the occupancy source, the traffic class per comm role,\n"
      "and the verdict: the mode TRIRACE_MODE asks for and the mode a job would get, with the reason\n"
      "and the fix when they differ. Run it in the job's environment (the same TRIRACE_* and NCCL_*\n"
      "variables). Exit status 0 when the requested mode runs, 1 when it does not.");
  return {cmd, [state] {
            std::optional<MarksFinding> other;
            if (!state->qdiscs.empty()) {
              absl::StatusOr<MarksFinding> f = JudgeQdiscFile(state->qdiscs);
              if (!f.ok()) {
                std::fprintf(stderr, "trirace doctor: %s\n", std::string(f.status().message()).c_str());
                return kExitUsage;
              }
              other = *std::move(f);
            }
            const DoctorReport r = Examine(other ? &*other : nullptr);
            if (state->json) {
              nlohmann::json j = ToJson(r);
              if (state->rank) j["rank"] = *state->rank;
              std::printf("%s\n", j.dump(2).c_str());
            } else {
              PrintText(r, state->rank ? absl::StrCat("rank ", *state->rank, ": ") : "");
            }
            return RequestedModeRuns(r) ? 0 : 1;
          }};
}

}  // namespace trirace::tools
