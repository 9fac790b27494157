// Test helper for the rank programs (random_ranks, peer_ranks, bad_calls):
// an NCCL or hostccl function looked up by name, so a preloaded shim's
// ncclX is the one called. A missing symbol ends the program with exit 3
// and one line naming the program and the symbol.
//
//   auto sync = Lookup<ncclResult_t (*)(cudaStream_t)>(handle, "hostcclStreamSynchronize");
//   NCCL(ncclAllReduce)(...);   // through the dynamic linker
#ifndef TRIRACE_TESTS_INTERPOSE_NCCL_LOOKUP_H_
#define TRIRACE_TESTS_INTERPOSE_NCCL_LOOKUP_H_

#include <dlfcn.h>
#include <errno.h>

#include <cstdio>
#include <cstdlib>

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

#endif  // TRIRACE_TESTS_INTERPOSE_NCCL_LOOKUP_H_
