#include "plugin/loader/net_plugin_loader.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/library_paths.h"
#include "common/logging.h"

namespace trirace::net {
namespace {

struct TableSymbol {
  const char* symbol;
  int version;
};
constexpr TableSymbol kTables[] = {{TRIRACE_NCCL_NET_SYMBOL_V11, 11},
                                   {TRIRACE_NCCL_NET_SYMBOL_V10, 10},
                                   {TRIRACE_NCCL_NET_SYMBOL_V9, 9},
                                   {TRIRACE_NCCL_NET_SYMBOL_V8, 8}};

}  // namespace

void NetPlugin::Unload() {
  api.reset();
  if (handle != nullptr) dlclose(handle);
  handle = nullptr;
}

std::vector<std::string> NetPluginFileNames(const std::string& name) {
  std::vector<std::string> files = {name};
  if (name.find('/') == std::string::npos) files.push_back(absl::StrCat("libnccl-net-", name, ".so"));
  return files;
}

absl::StatusOr<NetPlugin> LoadNetPlugin(const std::vector<std::string>& names, int version) {
  std::vector<std::string> errors;
  for (const std::string& file : names) {
    dlerror();
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      errors.push_back(why != nullptr ? why : absl::StrCat(file, ": dlopen failed"));
      continue;
    }
    for (const TableSymbol& t : kTables) {
      if (version != 0 && t.version != version) continue;
      const void* table = dlsym(handle, t.symbol);
      if (table == nullptr) continue;
      const std::string loaded = LoadedFile(handle);
      if (const std::string why = WorldWritableReason(loaded); !why.empty()) {
        TRIRACE_WARN(NET, "net plugin %s: %s: anyone who can write there can run code in this job", loaded, why);
      }
      NetPlugin plugin;
      plugin.path = file;
      plugin.handle = handle;
      plugin.api = AdaptNetTable(table, t.version);
      return plugin;
    }
    dlclose(handle);
    errors.push_back(version != 0 ? absl::StrCat(file, ": exports no ncclNetPlugin_v", version)
                                  : absl::StrCat(file, ": exports no ncclNetPlugin_v8..v11 table"));
  }
  return absl::NotFoundError(absl::StrJoin(errors, "; "));
}

}  // namespace trirace::net
