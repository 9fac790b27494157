// The table between the hwloc module (libtrirace-topo-hwloc.so, the only
// TriRace object linked with libhwloc) and the loader in hwloc.cc, which
// dlopens it at run time so that a machine without libhwloc still runs
// `trirace` and its discovery (from sysfs, with a note saying why).
//
// The module is built in the same build as its loader, from the same
// headers: the table carries Host's size and an ABI number so that a module
// from another build is refused instead of misread.
//
// Thread safety: the functions share no state; safe from several threads.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_HWLOC_MODULE_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_HWLOC_MODULE_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/model.h"

inline constexpr int kTriraceHwlocAbi = 1;
inline constexpr const char* kTriraceHwlocModule = "libtrirace-topo-hwloc.so";
inline constexpr const char* kTriraceHwlocSymbol = "trirace_topo_hwloc_v1";

struct TriraceHwlocApiV1 {
  int abi;                // kTriraceHwlocAbi
  size_t host_size;       // sizeof(trirace::topo::Host) where the module was built
  const char* hwloc_version;  // HWLOC_VERSION the module was built with
  absl::StatusOr<trirace::topo::Host> (*discover)();  // DiscoverHwloc
  absl::StatusOr<trirace::topo::Host> (*parse_xml)(absl::string_view text, absl::string_view origin);
};

extern "C" const TriraceHwlocApiV1* trirace_topo_hwloc_v1();

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_HWLOC_MODULE_H_
