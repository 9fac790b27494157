// The subcommands of the `trirace` command. Each adds itself to the CLI11
// app with its flags and returns the function that runs it once the command
// line is parsed; that function returns the process exit code: 0 success,
// 2 bad usage, anything else a failure the command has already explained on
// stderr.
#ifndef TRIRACE_TOOLS_TRIRACE_COMMANDS_H_
#define TRIRACE_TOOLS_TRIRACE_COMMANDS_H_

#include <functional>
#include <string>

#include "CLI/CLI.hpp"

namespace trirace::tools {

struct Command {
  CLI::App* app;            // the subcommand, owned by the `trirace` app
  std::function<int()> run;  // runs it with the flags parsed into its state
};

Command AddVersionCommand(CLI::App& trirace);
Command AddEnvCommand(CLI::App& trirace);
Command AddRunCommand(CLI::App& trirace);
Command AddNetTopCommand(CLI::App& trirace);
Command AddDemoCommand(CLI::App& trirace);
Command AddTopoCommand(CLI::App& trirace);
Command AddSimCommand(CLI::App& trirace);     // built with the sim module (TRIRACE_WITH_SIM)
Command AddAdviseCommand(CLI::App& trirace);  // built with the sim module (TRIRACE_WITH_SIM)
Command AddDoctorCommand(CLI::App& trirace);  // built with the interpose module (TRIRACE_WITH_DOCTOR)

// What `trirace version` and `trirace --version` print: the version, the git
// revision and the NCCL headers, one line each.
std::string VersionText();

// Ends parsing because a flag's value is not accepted; `message` is printed
// as it is, after "trirace <command>: ". For the callbacks of
// add_option_function, which CLI11 runs once every flag is read.
[[noreturn]] inline void RejectValue(const std::string& message) {
  throw CLI::ValidationError(message, CLI::ExitCodes::ValidationError);
}

inline constexpr int kExitUsage = 2;

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_COMMANDS_H_
