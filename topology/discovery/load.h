// Loading a topology file whose format is told by its content: a TriRace JSON
// spec ('{' first), an NCCL topology XML (root <system>) or an hwloc XML
// export (root <topology>, `lstopo --of xml`; read through hwloc, so a build
// without hwloc answers Unimplemented naming the file). This is what
// `trirace topo --from FILE` uses; it needs the XML parsers (the
// trirace_topology_discovery library). The shim reads TRIRACE_TOPO_FILE
// with spec_file.h instead (JSON specs only: no XML library in the job).
// AssignNics has run on every host of the result.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_LOAD_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_LOAD_H_

#include <string>

#include "absl/status/statusor.h"
#include "topology/model.h"

namespace trirace::topo {

// The System in `path`. A one-host format (NCCL XML, hwloc XML) gives a
// System of one host keyed `host_key`. Errors name the file; a missing or unreadable file
// is NotFound / PermissionDenied, a file that does not parse InvalidArgument.
absl::StatusOr<System> LoadTopologyFile(const std::string& path, const std::string& host_key = "localhost");

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_LOAD_H_
