// Where TriRace finds its own libraries and modules at run time: beside the
// running program, in <prefix>/lib of the build tree or of an install
// prefix. Used by `trirace run` (the shim and the net plugin) and by
// topology discovery (the hwloc module).
//
// Thread safety: pure functions (they read /proc/self/exe and the file system).
#ifndef TRIRACE_COMMON_LIBRARY_PATHS_H_
#define TRIRACE_COMMON_LIBRARY_PATHS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace trirace {

// The folders searched, in order: <exe dir>/../lib, then the install
// layout's library folder relative to the program (once each).
std::vector<std::string> LibrarySearchDirs();
// The first readable `<dir>/<name>` of LibrarySearchDirs(), or "".
std::string FindLibrary(absl::string_view name);

}  // namespace trirace

#endif  // TRIRACE_COMMON_LIBRARY_PATHS_H_
