#include <cstdio>

#include "build_info.h"
#include "commands.h"
#include "git_revision.h"

namespace trirace::tools {

int VersionCommand(Args args) {
  for (const char* arg : args) {
    if (IsHelp(arg)) {
      std::printf("usage: trirace version\n\nPrints the TriRace version, its git revision and the "
                  "version of the NCCL headers it was built against.\n");
      return 0;
    }
    std::fprintf(stderr, "trirace version: unexpected argument \"%s\"\n", arg);
    return kExitUsage;
  }
  std::printf("trirace %s (git %s)\n", TRIRACE_VERSION_STRING, TRIRACE_GIT_REVISION);
  std::printf("built against NCCL headers %s\n", TRIRACE_NCCL_HEADER_VERSION);
  return 0;
}

}  // namespace trirace::tools
