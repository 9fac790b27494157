#include <cstdio>

#include "build_info.h"
#include "commands.h"
#include "git_revision.h"

namespace trirace::tools {

Command AddVersionCommand(CLI::App& trirace) {
  CLI::App* cmd = trirace.add_subcommand("version", "print the TriRace version and the NCCL headers it was built with");
  cmd->footer("Prints the TriRace version, its git revision and the version of the NCCL headers it was built\n"
              "against.");
  return {cmd, [] {
            std::printf("trirace %s (git %s)\n", TRIRACE_VERSION_STRING, TRIRACE_GIT_REVISION);
            std::printf("built against NCCL headers %s\n", TRIRACE_NCCL_HEADER_VERSION);
            return 0;
          }};
}

}  // namespace trirace::tools
