#include "common/library_paths.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>


namespace trirace {

std::vector<std::string> LibrarySearchDirs() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path bin = exe.parent_path();
  std::vector<std::string> dirs;
  for (const std::filesystem::path& dir : {bin / ".." / "lib", bin / TRIRACE_BIN_TO_LIB}) {
    std::string d = dir.lexically_normal().string();
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(std::move(d));
  }
  return dirs;
}

std::string FindLibrary(absl::string_view name) {
  for (const std::string& dir : LibrarySearchDirs()) {
    std::filesystem::path p = std::filesystem::path(dir) / std::string(name);
    if (access(p.c_str(), R_OK) == 0) return p.string();
  }
  return "";
}

}  // namespace trirace
