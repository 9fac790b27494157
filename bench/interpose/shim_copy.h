// Benchmark support: private copies of libtrirace.so side by side in one
// process. The shim reads its mode once per process, so each configuration
// to compare is its own copy of the library file, loaded RTLD_LOCAL so the
// copies share no state. Errors end the benchmark with a message naming the
// program.
#ifndef TRIRACE_BENCH_INTERPOSE_SHIM_COPY_H_
#define TRIRACE_BENCH_INTERPOSE_SHIM_COPY_H_

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>

namespace trirace_bench {

// dlsym that exits when `name` is missing.
template <typename Fn>
Fn Sym(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == nullptr) {
    std::fprintf(stderr, "%s: %s not found: %s\n", program_invocation_short_name, name, dlerror());
    std::exit(1);
  }
  return reinterpret_cast<Fn>(p);
}

// Copies `shim` to `dir`/libtrirace-`tag`.so, sets `env` (read by the copy
// at its first call), and loads the copy; exits on failure.
inline void* LoadShimCopy(const std::string& shim, const std::string& dir, const std::string& tag,
                          std::initializer_list<std::pair<const char*, const char*>> env) {
  const std::string copy = dir + "/libtrirace-" + tag + ".so";
  std::filesystem::copy_file(shim, copy, std::filesystem::copy_options::overwrite_existing);
  for (const auto& [name, value] : env) setenv(name, value, 1);
  void* h = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "%s: cannot load %s: %s\n", program_invocation_short_name, copy.c_str(), dlerror());
    std::exit(1);
  }
  return h;
}

}  // namespace trirace_bench

#endif  // TRIRACE_BENCH_INTERPOSE_SHIM_COPY_H_
