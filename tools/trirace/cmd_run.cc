// trirace run: exec a program with the shim preloaded, the network transport
// chosen (net_choice.h: TriRace's TCP plugin, TriRace's plugin wrapping the
// user's, or NCCL's own), and the TRIRACE_* variables that the flags ask for.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "common/params.h"
#include "library_paths.h"
#include "net_choice.h"

namespace trirace::tools {
namespace {

// The help's closing text: where the libraries are looked up.
std::string Footer() {
  std::string text =
      "Runs CMD with the TriRace shim (" + std::string(kShimLibrary) +
      ") in LD_PRELOAD and the network transport --net chooses:\n"
      "  auto    (default) wrap a net plugin set in NCCL_NET_PLUGIN; else native where an RDMA port is\n"
      "          ACTIVE (TRIRACE_SYSFS_ROOT) and IB is not disabled; else tcp\n"
      "  tcp     NCCL_NET_PLUGIN = the TriRace net plugin (" + std::string(kNetPluginLibrary) + "), over TCP\n"
      "  wrap    NCCL_NET_PLUGIN = the TriRace net plugin, TRIRACE_NET_INNER = your plugin, which it wraps\n"
      "  native  NCCL_NET_PLUGIN left to NCCL: NCCL keeps its own IB (or socket) transport\n"
      "One line on stderr says the choice and why. Both libraries are looked up next to this command, in:\n";
  for (const std::string& d : LibrarySearchDirs()) text += "  " + d + "\n";
  text += "Variables already in the environment are kept unless a flag sets them or the net line says\n"
          "it replaced them. CMD and everything after it go to the program untouched.";
  return text;
}

// A flag that sets the parameter `id`: its value is checked as the
// parameter's own and exported once the command line is read.
void AddParamFlag(CLI::App* cmd, const char* flag, const char* value_name, ParamId id,
                  std::vector<std::pair<ParamId, std::string>>* set) {
  const ParamSpec& spec = Params::Spec(id);
  cmd->add_option_function<std::string>(
         flag,
         [flag, id, set](const std::string& value) {
           const ParamSpec& spec = Params::Spec(id);
           auto parsed = Params::Parse(spec, value);
           if (!parsed.ok()) {
             RejectValue(std::string(flag) + " \"" + value + "\" is not valid: expected " + spec.Accepted());
           }
           set->emplace_back(id, parsed->text);
         },
         "sets " + std::string(spec.name) + " (" + spec.Accepted() + ")")
      ->type_name(value_name);
}

// Prepends `lib` to LD_PRELOAD unless it is already listed.
void AddPreload(const std::string& lib) {
  const char* current = std::getenv("LD_PRELOAD");
  std::string value = lib;
  if (current != nullptr && *current != '\0') {
    for (absl::string_view entry : absl::StrSplit(current, absl::ByAnyChar(": "), absl::SkipEmpty())) {
      if (entry == lib) return;
    }
    value += ":";
    value += current;
  }
  setenv("LD_PRELOAD", value.c_str(), 1);
}

// Runs `command` with the shim and the network transport `net`; returns
// only on failure.
int Exec(const std::vector<std::pair<ParamId, std::string>>& set, NetChoice net,
         const std::vector<std::string>& command) {
  if (command.empty()) {
    std::fprintf(stderr, "trirace run: no command given (usage: trirace run [options] -- CMD [ARGS...])\n");
    return kExitUsage;
  }
  for (const auto& [id, text] : set) setenv(std::string(Params::Spec(id).name).c_str(), text.c_str(), 1);

  const std::string shim = FindLibrary(kShimLibrary);
  if (shim.empty()) {
    std::fprintf(stderr, "trirace run: the shim %s is not built or installed; looked in:\n",
                 std::string(kShimLibrary).c_str());
    for (const std::string& d : LibrarySearchDirs()) std::fprintf(stderr, "  %s\n", d.c_str());
    std::fprintf(stderr, "build it (cmake --build build) or install the trirace package\n");
    return 1;
  }
  const std::string plugin = FindLibrary(kNetPluginLibrary);
  const absl::StatusOr<NetDecision> decision =
      DecideNet(GatherNetInputs(net, ReadNetEnv(), plugin, ParamString(ParamId::kSysfsRoot)));
  if (!decision.ok()) {
    std::fprintf(stderr, "trirace run: %s\n", std::string(decision.status().message()).c_str());
    if (absl::IsInvalidArgument(decision.status())) return kExitUsage;
    std::fprintf(stderr, "looked in:\n");
    for (const std::string& d : LibrarySearchDirs()) std::fprintf(stderr, "  %s\n", d.c_str());
    return 1;
  }
  AddPreload(shim);
  std::fprintf(stderr, "trirace run: %s\n", NetLine(*decision).c_str());
  ApplyEnvChanges(decision->env);

  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "trirace run: cannot run \"%s\": %s\n", argv[0], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

}  // namespace

Command AddRunCommand(CLI::App& trirace) {
  struct State {
    std::vector<std::pair<ParamId, std::string>> set;  // parameter, value, in flag order
    NetChoice net = NetChoice::kAuto;
    std::vector<std::string> command;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = trirace.add_subcommand("run", "run a program with the TriRace shim and net plugin loaded");
  AddParamFlag(cmd, "--mode", "M", ParamId::kMode, &state->set);
  AddParamFlag(cmd, "--policy", "P", ParamId::kPolicy, &state->set);
  cmd->add_option_function<std::string>(
         "--net",
         [state](const std::string& value) {
           const std::optional<NetChoice> choice = ParseNetChoice(value);
           if (!choice) RejectValue("--net \"" + value + "\" is not valid: expected " + NetChoicesAccepted());
           state->net = *choice;
         },
         "network transport: " + NetChoicesAccepted() + " (default auto; see below)")
      ->type_name("NET");
  cmd->add_option("CMD", state->command, "the program and its arguments")->type_name("");
  // The first argument that is not one of run's flags (or anything after
  // `--`) starts the command: it and the rest are the program's.
  cmd->positionals_at_end();
  cmd->footer(Footer());
  return {cmd, [state] { return Exec(state->set, state->net, state->command); }};
}

}  // namespace trirace::tools
