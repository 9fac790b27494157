#include "topology/discovery/hwloc.h"

#include <dlfcn.h>

#include <string>

#include "absl/base/call_once.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/library_paths.h"
#include "topology/discovery/hwloc_module.h"

namespace trirace::topo {
namespace {

#if TRIRACE_HAVE_HWLOC
// The module once per process; a failure is kept and reported each time.
struct LoadedModule {
  absl::once_flag once;
  absl::StatusOr<const TriraceHwlocApiV1*> api = absl::UnknownError("not loaded");
};

LoadedModule& Default() {
  static LoadedModule* m = new LoadedModule();
  return *m;
}

const absl::StatusOr<const TriraceHwlocApiV1*>& DefaultApi() {
  LoadedModule& m = Default();
  absl::call_once(m.once, [&m] { m.api = OpenHwlocModule(HwlocModulePath()); });
  return m.api;
}
#endif

}  // namespace

std::string HwlocModulePath() {
  std::string found = FindLibrary(kTriraceHwlocModule);
  return found.empty() ? kTriraceHwlocModule : found;  // else the dynamic linker's search path
}

absl::StatusOr<const TriraceHwlocApiV1*> OpenHwlocModule(const std::string& path) {
  // Never closed: the Hosts it made may outlive any caller's use of it.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrCat("hwloc module not loaded: ", why != nullptr ? why : path));
  }
  using Entry = const TriraceHwlocApiV1* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kTriraceHwlocSymbol));
  const TriraceHwlocApiV1* api = entry != nullptr ? entry() : nullptr;
  if (api == nullptr || api->abi != kTriraceHwlocAbi || api->host_size != sizeof(Host) || api->discover == nullptr ||
      api->parse_xml == nullptr) {
    dlclose(handle);
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not the hwloc module of this build of TriRace (no ", kTriraceHwlocSymbol,
                     " of ABI ", kTriraceHwlocAbi, ")"));
  }
  return api;
}

absl::StatusOr<Host> DiscoverHwloc() {
#if TRIRACE_HAVE_HWLOC
  const absl::StatusOr<const TriraceHwlocApiV1*>& api = DefaultApi();
  if (!api.ok()) return api.status();
  return (*api)->discover();
#else
  return absl::UnimplementedError("built without hwloc");
#endif
}

absl::StatusOr<Host> ParseHwlocXml(absl::string_view text, absl::string_view origin) {
#if TRIRACE_HAVE_HWLOC
  const absl::StatusOr<const TriraceHwlocApiV1*>& api = DefaultApi();
  if (!api.ok()) return absl::Status(api.status().code(), absl::StrCat(origin, ": an hwloc XML export: ",
                                                                       api.status().message()));
  return (*api)->parse_xml(text, origin);
#else
  (void)text;
  return absl::UnimplementedError(absl::StrCat(origin, ": an hwloc XML export, and TriRace was built without hwloc"));
#endif
}

}  // namespace trirace::topo
