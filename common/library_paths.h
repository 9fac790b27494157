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

// Why a library loaded from `path` could be replaced by another user of this
// machine: "the file is world-writable", or "the folder /x is
// world-writable" for the file's folder or, when `path` is a symbolic link,
// the link's; "" when none is (or `path` cannot be examined). The
// shim and the net plugin loader WARN with it before using such a library:
// whoever can write there can run code inside the training job.
std::string WorldWritableReason(const std::string& path);
// The file a dlopen handle was loaded from (dlinfo), or "".
std::string LoadedFile(void* handle);

}  // namespace trirace

#endif  // TRIRACE_COMMON_LIBRARY_PATHS_H_
