// Reading a topology file without the XML parsers: its text, its format
// (told by content), and the System of a TriRace JSON spec. This is what the
// preloaded shim uses for TRIRACE_TOPO_FILE, so that libtrirace.so needs no
// XML or hwloc library in the training job's environment; `trirace topo
// --from FILE --spec` turns an NCCL or hwloc XML into a spec
// (load.h LoadTopologyFile reads every format, with the parsers linked).
//
// Thread safety: stateless.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_SPEC_FILE_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_SPEC_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/model.h"

namespace trirace::topo {

enum class TopologyFormat { kJsonSpec, kNcclXml, kHwlocXml };

// The text of `path`. NotFound / PermissionDenied / InvalidArgument (a
// directory) naming the file.
absl::StatusOr<std::string> ReadTopologyText(const std::string& path);

// The format of `text` (a byte-order mark and leading blanks skipped): '{'
// a JSON spec, XML with root <system> an NCCL topology XML, root <topology>
// an hwloc export. InvalidArgument naming `path` and what is accepted
// otherwise.
absl::StatusOr<TopologyFormat> DetectTopologyFormat(absl::string_view text, const std::string& path);

// The System of the JSON spec in `path`, AssignNics run on every host. A
// file of another format is FailedPrecondition saying how to convert it.
absl::StatusOr<System> LoadTopologySpec(const std::string& path);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_SPEC_FILE_H_
