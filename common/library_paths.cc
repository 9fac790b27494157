#include "common/library_paths.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
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

std::string WorldWritableReason(const std::string& path) {
  if (path.empty()) return "";
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::weakly_canonical(path, ec);
  if (ec) return "";
  struct stat st {};
  if (stat(file.c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0) return "the file is world-writable";
  // The folder of the file, then that of the name it was loaded by (where a
  // symbolic link there led elsewhere): whoever can write in either can put
  // another library in its place.
  const std::filesystem::path named = std::filesystem::absolute(path, ec).lexically_normal().parent_path();
  for (const std::filesystem::path& dir : {file.parent_path(), named}) {
    if (!dir.empty() && stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0) {
      return "the folder " + dir.string() + " is world-writable";
    }
  }
  return "";
}

std::string LoadedFile(void* handle) {
  link_map* map = nullptr;
  if (handle == nullptr || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) {
    return "";
  }
  return map->l_name;
}

}  // namespace trirace
