#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "build_info.h"
#include "commands.h"
#include "git_revision.h"

namespace trirace::tools {

std::string VersionText() {
  return absl::StrCat("trirace ", TRIRACE_VERSION_STRING, " (git ", TRIRACE_GIT_REVISION, ")\n",
                      "built against NCCL headers ", TRIRACE_NCCL_HEADER_VERSION, "\n");
}

Command AddVersionCommand(CLI::App& trirace) {
  CLI::App* cmd = trirace.add_subcommand(
      "version", "print the TriRace version, its git revision and the NCCL headers it was built with");
  cmd->footer("Prints the TriRace version, its git revision and the version of the NCCL headers it was built\n"
              "against. `trirace --version` prints the same.");
  return {cmd, [] {
            std::printf("%s", VersionText().c_str());
            return 0;
          }};
}

}  // namespace trirace::tools
