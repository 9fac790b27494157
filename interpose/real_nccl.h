// RealNccl: the real NCCL library behind the shim, found without linking it.
//
// ResolveRealNccl() finds the library in this order:
//   1. the path in TRIRACE_NCCL_LIBRARY, when set (a path that does not load
//      is an error: the shim never silently uses another library);
//   2. a libnccl.so.2 already in the process (dlopen RTLD_NOLOAD), which is
//      how a framework that loaded NCCL with RTLD_LOCAL is still found;
//   3. libnccl.so.2 loaded by the shim itself (RTLD_LOCAL).
// On that handle each function is looked up as `pncclX`, then `ncclX`, then
// with RTLD_NEXT. A symbol that lives in the shim itself is never accepted,
// so a process whose only "NCCL" is libtrirace.so gets a clear error instead
// of endless recursion.
//
// The library is found when ncclGetVersion resolves; any other function it
// lacks (an older NCCL) stays nullptr and the shim's wrapper of it returns
// ncclInvalidUsage with one WARN.
//
// Thread safety: a RealNccl is immutable once returned.
#ifndef TRIRACE_INTERPOSE_REAL_NCCL_H_
#define TRIRACE_INTERPOSE_REAL_NCCL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "interpose/nccl_api.h"
#include "nccl.h"

namespace trirace::interpose {

struct RealNccl {
#define TRIRACE_REAL_NCCL_FIELD(name) decltype(&::nccl##name) name = nullptr;
  TRIRACE_NCCL_API(TRIRACE_REAL_NCCL_FIELD)
#undef TRIRACE_REAL_NCCL_FIELD

  void* handle = nullptr;  // from dlopen; never closed (other code may hold its symbols)
  std::string path;        // file the functions came from
  std::string how;         // how it was found, for the INFO line
  bool is_hostccl = false; // the library exports hostccl's stream API
  int missing = 0;         // functions of nccl.h it does not provide
};

// RealNccl::how for a library the shim dlopened itself (the loader's search).
inline constexpr const char* kHowLoadedByShim = "libnccl.so.2 loaded by the shim";

// Finds the real library; `configured_path` is TRIRACE_NCCL_LIBRARY (empty:
// unset). The error names what was tried.
absl::StatusOr<std::unique_ptr<RealNccl>> ResolveRealNccl(absl::string_view configured_path);

// True when `address` lies inside the shim's own shared object.
bool IsInsideShim(const void* address);

// NCCL version code helpers (2.9 and later: major*10000 + minor*100 + patch).
inline int NcclMajor(int code) { return code / 10000; }
inline int NcclMinor(int code) { return code / 100 % 100; }
inline int NcclPatch(int code) { return code % 100; }

// The oldest real NCCL the shim supports, and the newest it knows.
inline constexpr int kOldestSupportedNccl = 21900;
inline constexpr int kNewestKnownNcclMinor = NCCL_MAJOR * 10000 + NCCL_MINOR * 100;

// What the shim does with a real NCCL of version `code`. NCCL keeps its C
// API's signatures across a major version (functions are only added), so
// every 2.x from 2.19 on is scheduled, a minor newer than the headers too;
// what a newer minor may have changed is a struct's layout: the shim
// then leaves ncclConfig_t as the caller made it (no trafficClass per
// role). Older releases and other majors are only observed.
enum class NcclSupport {
  kTooOld,      // before kOldestSupportedNccl: observe only
  kOtherMajor,  // not NCCL_MAJOR: observe only
  kKnown,       // up to the headers' minor: everything
  kNewerMinor,  // the headers' major, a newer minor: schedule, configs untouched
};
NcclSupport SupportOf(int code);
// "2.31.0".
std::string NcclVersionText(int code);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_REAL_NCCL_H_
