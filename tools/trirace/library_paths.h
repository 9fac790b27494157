// The libraries `trirace` injects, found with FindLibrary
// (common/library_paths.h): next to itself, in <prefix>/lib of the build
// tree or of an install prefix.
#ifndef TRIRACE_TOOLS_TRIRACE_LIBRARY_PATHS_H_
#define TRIRACE_TOOLS_TRIRACE_LIBRARY_PATHS_H_

#include "absl/strings/string_view.h"
#include "common/library_paths.h"

namespace trirace::tools {

inline constexpr absl::string_view kShimLibrary = "libtrirace.so";
inline constexpr absl::string_view kNetPluginLibrary = "libnccl-net-trirace.so";

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_LIBRARY_PATHS_H_
