// Fuzz target: the topology file parsers, on whatever text a user may point
// TRIRACE_TOPO_FILE at. The first byte picks the parser (JSON spec or NCCL
// topology XML); a spec that parses must round-trip through ToJsonSpec.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "topology/discovery/json_spec.h"
#include "topology/discovery/nccl_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const absl::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    (void)trirace::topo::ParseNcclTopoXml(text, "fuzz.xml");
    return 0;
  }
  const absl::StatusOr<trirace::topo::System> sys = trirace::topo::ParseJsonSpec(text, "fuzz.json");
  if (sys.ok()) {
    const std::string spec = trirace::topo::ToJsonSpec(*sys);
    const absl::StatusOr<trirace::topo::System> again = trirace::topo::ParseJsonSpec(spec, "round-trip");
    if (!again.ok() || trirace::topo::ToJsonSpec(*again) != spec) std::abort();
  }
  return 0;
}
