// Test helpers for the rank programs (random_ranks, peer_ranks, bad_calls):
// an NCCL or hostccl function looked up by name, so a preloaded shim's
// ncclX is the one called (a missing symbol ends the program with exit 3
// and one line naming the program and the symbol); the library loaded; the
// job's unique id made or parsed.
//
//   void* h = LoadRankLibrary(lib);
//   auto sync = Lookup<ncclResult_t (*)(cudaStream_t)>(h, "hostcclStreamSynchronize");
//   if (int rc = RankUniqueId(uid_hex, &id); rc != 0) return rc;
//   NCCL(ncclAllReduce)(...);   // through the dynamic linker
#ifndef TRIRACE_TESTS_INTERPOSE_NCCL_LOOKUP_H_
#define TRIRACE_TESTS_INTERPOSE_NCCL_LOOKUP_H_

#include <dlfcn.h>
#include <errno.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "nccl.h"
#include "nccl_adapter/unique_id_text.h"

template <typename Fn>
Fn Lookup(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == nullptr) {
    std::fprintf(stderr, "%s: %s not found\n", program_invocation_short_name, name);
    std::exit(3);
  }
  return reinterpret_cast<Fn>(p);
}

// ncclX through the dynamic linker (the shim when preloaded).
#define NCCL(name) Lookup<decltype(&::name)>(RTLD_DEFAULT, #name)

// Loads `lib` globally (its hostccl stream API and ncclX resolve), or ends
// the program with exit 3 and one line.
inline void* LoadRankLibrary(const std::string& lib) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    std::fprintf(stderr, "%s: cannot load %s: %s\n", program_invocation_short_name, lib.c_str(), dlerror());
    std::exit(3);
  }
  return h;
}

// The job's unique id: with `uid_hex` empty (the first rank) made here and
// printed as "uid HEX" for the others, else parsed from it. Returns 0, or
// the program's exit code: 4 when ncclGetUniqueId failed, 2 when `uid_hex`
// is not an id.
inline int RankUniqueId(const std::string& uid_hex, ncclUniqueId* id) {
  if (!uid_hex.empty()) return trirace::UniqueIdFromHex(uid_hex, id) ? 0 : 2;
  if (NCCL(ncclGetUniqueId)(id) != ncclSuccess) return 4;
  std::printf("uid %s\n", trirace::UniqueIdToHex(*id).c_str());
  std::fflush(stdout);
  return 0;
}

#endif  // TRIRACE_TESTS_INTERPOSE_NCCL_LOOKUP_H_
