// trirace: the TriRace command line.
#include <cstdio>
#include <cstring>
#include <span>
#include "absl/strings/string_view.h"

#include "commands.h"

namespace trirace::tools {
namespace {

struct Command {
  absl::string_view name;
  int (*run)(Args);
  absl::string_view summary;
};

constexpr Command kCommands[] = {
    {"version", VersionCommand, "print the TriRace version and the NCCL headers it was built with"},
    {"env", EnvCommand, "list every TRIRACE_* parameter: value, source, default, description"},
    {"run", RunCommand, "run a program with the TriRace shim and net plugin loaded"},
    {"net-top", NetTopCommand, "live per-NIC network occupancy published by the TriRace net plugin"},
    {"demo", DemoCommand, "the end-to-end speed-up: the contention preset under every mode, with pictures"},
};

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: trirace <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands) {
    std::fprintf(out, "  %-10.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                 static_cast<int>(c.summary.size()), c.summary.data());
  }
  std::fprintf(out, "\n`trirace <command> --help` describes one command.\n");
}

}  // namespace

bool IsHelp(absl::string_view arg) { return arg == "-h" || arg == "--help"; }

int Main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return kExitUsage;
  }
  const absl::string_view name = argv[1];
  if (IsHelp(name) || name == "help") {
    PrintUsage(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (c.name == name) return c.run(Args(argv + 2, static_cast<size_t>(argc - 2)));
  }
  std::fprintf(stderr, "trirace: unknown command \"%s\"\n\n", argv[1]);
  PrintUsage(stderr);
  return kExitUsage;
}

}  // namespace trirace::tools

int main(int argc, char** argv) { return trirace::tools::Main(argc, argv); }
