// trirace run: exec a program with the shim preloaded and the net plugin
// selected, and the TRIRACE_* variables that the flags ask for.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "commands.h"
#include "common/params.h"
#include "library_paths.h"

namespace trirace::tools {
namespace {

// The help's closing text: where the libraries are looked up.
std::string Footer() {
  std::string text = "Runs CMD with the TriRace shim (" + std::string(kShimLibrary) +
                     ") in LD_PRELOAD and, unless NCCL_NET_PLUGIN is\nalready set, NCCL_NET_PLUGIN "
                     "pointing at the TriRace net plugin (" + std::string(kNetPluginLibrary) +
                     ").\nBoth are looked up next to this command, in:\n";
  for (const std::string& d : LibrarySearchDirs()) text += "  " + d + "\n";
  text += "Variables already in the environment are kept unless a flag sets them. CMD and everything\n"
          "after it go to the program untouched.";
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

// Runs `command` with the shim and the net plugin; returns only on failure.
int Exec(const std::vector<std::pair<ParamId, std::string>>& set, const std::vector<std::string>& command) {
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
  AddPreload(shim);
  const std::string plugin = FindLibrary(kNetPluginLibrary);
  if (const char* user_plugin = std::getenv("NCCL_NET_PLUGIN"); user_plugin != nullptr && *user_plugin) {
    std::fprintf(stderr, "trirace run: keeping NCCL_NET_PLUGIN=%s as set\n", user_plugin);
  } else if (!plugin.empty()) {
    setenv("NCCL_NET_PLUGIN", plugin.c_str(), 1);
  } else {
    std::fprintf(stderr, "trirace run: net plugin %s not found; link occupancy will come from NIC counters\n",
                 std::string(kNetPluginLibrary).c_str());
  }

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
    std::vector<std::string> command;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = trirace.add_subcommand("run", "run a program with the TriRace shim and net plugin loaded");
  AddParamFlag(cmd, "--mode", "M", ParamId::kMode, &state->set);
  AddParamFlag(cmd, "--policy", "P", ParamId::kPolicy, &state->set);
  cmd->add_option("CMD", state->command, "the program and its arguments")->type_name("");
  // The first argument that is not one of run's flags (or anything after
  // `--`) starts the command: it and the rest are the program's.
  cmd->positionals_at_end();
  cmd->footer(Footer());
  return {cmd, [state] { return Exec(state->set, state->command); }};
}

}  // namespace trirace::tools
