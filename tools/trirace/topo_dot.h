// The system model as a Graphviz graph, for `trirace topo --png`: one
// cluster per host, NUMA nodes at the top, PCIe switches under them (edges
// labelled with the link's rate), GPUs and NICs as leaves, a dashed edge
// from each GPU to the NIC it uses, and the fabric below the hosts (one
// leaf switch per rail on a rail-optimised fabric, else one switch).
#ifndef TRIRACE_TOOLS_TRIRACE_TOPO_DOT_H_
#define TRIRACE_TOOLS_TRIRACE_TOPO_DOT_H_

#include <string>

#include "absl/status/status.h"
#include "topology/model.h"

namespace trirace::tools {

// The DOT text of `sys`.
std::string TopologyDot(const topo::System& sys);

// Renders `dot` to the PNG file `path` with Graphviz's `dot` program.
// FailedPrecondition when `dot` is not installed (naming the package),
// Internal with its messages when it fails.
absl::Status RenderPng(const std::string& dot, const std::string& path);

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_TOPO_DOT_H_
