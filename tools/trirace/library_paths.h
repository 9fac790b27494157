// Where `trirace` finds the libraries it injects: next to itself, in
// <prefix>/lib of the build tree or of an install prefix.
#ifndef TRIRACE_TOOLS_TRIRACE_LIBRARY_PATHS_H_
#define TRIRACE_TOOLS_TRIRACE_LIBRARY_PATHS_H_

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

namespace trirace::tools {

inline constexpr absl::string_view kShimLibrary = "libtrirace.so";
inline constexpr absl::string_view kNetPluginLibrary = "libnccl-net-trirace.so";

// The folders searched, in order: <exe dir>/../lib, then the install
// layout's library folder relative to the command.
std::vector<std::string> LibrarySearchDirs();
// The first existing `<dir>/<name>` of LibrarySearchDirs(), or "".
std::string FindLibrary(absl::string_view name);

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_LIBRARY_PATHS_H_
