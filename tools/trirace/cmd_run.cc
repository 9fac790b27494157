// trirace run: exec a program with the shim preloaded and the net plugin
// selected, and the TRIRACE_* variables that the flags ask for.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "common/params.h"
#include "library_paths.h"

namespace trirace::tools {
namespace {

void PrintHelp() {
  std::printf(
      "usage: trirace run [--mode M] [--policy P] [--] CMD [ARGS...]\n\n"
      "Runs CMD with the TriRace shim (%s) in LD_PRELOAD and, unless NCCL_NET_PLUGIN is\n"
      "already set, NCCL_NET_PLUGIN pointing at the TriRace net plugin (%s).\n"
      "Both are looked up next to this command, in:\n",
      std::string(kShimLibrary).c_str(), std::string(kNetPluginLibrary).c_str());
  for (const std::string& d : LibrarySearchDirs()) std::printf("  %s\n", d.c_str());
  std::printf(
      "\noptions:\n"
      "  --mode M     sets TRIRACE_MODE (%s)\n"
      "  --policy P   sets TRIRACE_POLICY (%s)\n"
      "Variables already in the environment are kept unless a flag sets them.\n",
      Params::Spec(ParamId::kMode).Accepted().c_str(), Params::Spec(ParamId::kPolicy).Accepted().c_str());
}

// Validates `value` for the parameter `id` and exports it; false on error.
bool SetParamFromFlag(ParamId id, absl::string_view flag, absl::string_view value) {
  const ParamSpec& spec = Params::Spec(id);
  auto parsed = Params::Parse(spec, value);
  if (!parsed.ok()) {
    std::fprintf(stderr, "trirace run: %.*s \"%.*s\" is not valid: expected %s\n",
                 static_cast<int>(flag.size()), flag.data(), static_cast<int>(value.size()), value.data(),
                 spec.Accepted().c_str());
    return false;
  }
  setenv(std::string(spec.name).c_str(), parsed->text.c_str(), 1);
  return true;
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

}  // namespace

int RunCommand(Args args) {
  size_t i = 0;
  std::vector<std::pair<ParamId, std::pair<absl::string_view, absl::string_view>>> flags;
  for (; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (IsHelp(arg)) {
      PrintHelp();
      return 0;
    }
    if (arg == "--") {
      ++i;
      break;
    }
    if (!absl::StartsWith(arg, "-")) break;
    ParamId id;
    absl::string_view flag = arg.substr(0, arg.find('='));
    if (flag == "--mode") {
      id = ParamId::kMode;
    } else if (flag == "--policy") {
      id = ParamId::kPolicy;
    } else {
      std::fprintf(stderr, "trirace run: unknown option \"%s\" (see trirace run --help)\n", args[i]);
      return kExitUsage;
    }
    absl::string_view value;
    if (flag.size() < arg.size()) {
      value = arg.substr(flag.size() + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      std::fprintf(stderr, "trirace run: %.*s needs a value\n", static_cast<int>(flag.size()), flag.data());
      return kExitUsage;
    }
    flags.push_back({id, {flag, value}});
  }
  if (i >= args.size()) {
    std::fprintf(stderr, "trirace run: no command given (usage: trirace run [options] -- CMD [ARGS...])\n");
    return kExitUsage;
  }
  for (const auto& [id, fv] : flags) {
    if (!SetParamFromFlag(id, fv.first, fv.second)) return kExitUsage;
  }

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
  for (size_t k = i; k < args.size(); ++k) argv.push_back(const_cast<char*>(args[k]));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "trirace run: cannot run \"%s\": %s\n", argv[0], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

}  // namespace trirace::tools
