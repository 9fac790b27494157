#include "interpose/real_nccl.h"

#include <dlfcn.h>

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"

namespace trirace::interpose {
namespace {

// The base address of the shim's own object, from a symbol defined here.
const void* ShimBase() {
  static const void* base = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<const void*>(&IsInsideShim), &info) != 0 ? info.dli_fbase : nullptr;
  }();
  return base;
}

std::string DlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// Looks `name` up as pnccl<name>, nccl<name> on `handle`, then RTLD_NEXT;
// never returns an address inside the shim.
void* FindSymbol(void* handle, const char* name) {
  const std::string prefixed = absl::StrCat("pnccl", name);
  const std::string plain = absl::StrCat("nccl", name);
  void* const scopes[] = {handle, RTLD_NEXT};
  for (void* scope : scopes) {
    if (scope == nullptr) continue;
    for (const std::string* sym : {&prefixed, &plain}) {
      void* p = dlsym(scope, sym->c_str());
      if (p != nullptr && !IsInsideShim(p)) return p;
    }
  }
  return nullptr;
}

}  // namespace

bool IsInsideShim(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0) return false;
  return info.dli_fbase != nullptr && info.dli_fbase == ShimBase();
}

absl::StatusOr<std::unique_ptr<RealNccl>> ResolveRealNccl(absl::string_view configured_path) {
  auto real = std::make_unique<RealNccl>();
  if (!configured_path.empty()) {
    const std::string path(configured_path);
    real->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (real->handle == nullptr) {
      return absl::NotFoundError(absl::StrCat("TRIRACE_NCCL_LIBRARY=\"", path, "\" does not load: ", DlError(),
                                              "; expected the path of a libnccl.so.2"));
    }
    real->how = "TRIRACE_NCCL_LIBRARY";
  } else {
    real->handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    real->how = "already loaded libnccl.so.2";
    if (real->handle == nullptr) {
      real->handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
      real->how = kHowLoadedByShim;
    }
    // No handle is not fatal yet: RTLD_NEXT may still find a statically
    // loaded NCCL under another name.
    if (real->handle == nullptr) real->how = "RTLD_NEXT";
  }

#define TRIRACE_RESOLVE(name)                                                          \
  real->name = reinterpret_cast<decltype(real->name)>(FindSymbol(real->handle, #name)); \
  if (real->name == nullptr) ++real->missing;
  TRIRACE_NCCL_API(TRIRACE_RESOLVE)
#undef TRIRACE_RESOLVE

  if (real->GetVersion == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "no real NCCL found (tried ", configured_path.empty() ? "libnccl.so.2 and RTLD_NEXT" : "TRIRACE_NCCL_LIBRARY",
        "; only the shim itself defines ncclGetVersion): set TRIRACE_NCCL_LIBRARY to the path of libnccl.so.2"));
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(real->GetVersion), &info) != 0 && info.dli_fname != nullptr) {
    real->path = info.dli_fname;
  }
  real->is_hostccl = real->handle != nullptr && dlsym(real->handle, "hostcclStreamCreate") != nullptr;
  return real;
}

NcclSupport SupportOf(int code) {
  if (code < kOldestSupportedNccl) return NcclSupport::kTooOld;
  if (NcclMajor(code) != NCCL_MAJOR) return NcclSupport::kOtherMajor;
  return code / 100 * 100 > kNewestKnownNcclMinor ? NcclSupport::kNewerMinor : NcclSupport::kKnown;
}

std::string NcclVersionText(int code) {
  return absl::StrFormat("%d.%d.%d", NcclMajor(code), NcclMinor(code), NcclPatch(code));
}

}  // namespace trirace::interpose
