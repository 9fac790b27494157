// The subcommands of the `trirace` command. Each takes the arguments after
// its name and returns the process exit code: 0 success, 2 bad usage,
// anything else a failure the command has already explained on stderr.
#ifndef TRIRACE_TOOLS_TRIRACE_COMMANDS_H_
#define TRIRACE_TOOLS_TRIRACE_COMMANDS_H_

#include <span>
#include "absl/strings/string_view.h"

namespace trirace::tools {

using Args = std::span<const char* const>;

int VersionCommand(Args args);
int EnvCommand(Args args);
int RunCommand(Args args);
int NetTopCommand(Args args);
int DemoCommand(Args args);

// True when `arg` is -h or --help.
bool IsHelp(absl::string_view arg);

inline constexpr int kExitUsage = 2;

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_COMMANDS_H_
