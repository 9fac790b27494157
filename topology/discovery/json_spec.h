// The TriRace JSON topology spec: a whole System (hosts, PCIe trees, GPUs,
// NICs, rates, fabric) written by hand or by the test bed, for test beds and
// the simulator.
//
//   {
//     "fabric": {"kind": "single_switch" | "rail_optimized" | "two_tier",
//                "hosts_per_leaf": 4, "oversubscription": 2.0},
//     "hosts": [
//       {"key": "node0", "numa_nodes": 2,
//        "pci": [{"busid": "0000:10:00.0", "switch": true, "numa": 0, "gbps": 256},
//                {"busid": "0000:11:00.0", "parent": "0000:10:00.0", "gbps": 256}],
//        "gpus": [{"pci": "0000:11:00.0", "numa": 0, "dev": 0,
//                  "nvlinks": [{"target": "nvswitch", "count": 18}], "nvlink_gbps": 200}],
//        "nics": [{"name": "mlx5_0", "pci": "0000:12:00.0", "numa": 0,
//                  "link_layer": "ib" | "eth", "gbps": 400, "port": 1}]},
//       {"key": "node1", "like": "node0"}          a copy of node0's hardware
//     ]
//   }
//
// Only "hosts" (each with a "key") is required. A host's "pci" entries name
// their parent by bus id; GPUs and NICs name their PCI node by bus id (an
// endpoint not listed under "pci" is added under the CPU of its "numa").
// "like" copies the hardware of a host listed earlier (such a host gives no
// "numa_nodes", "pci", "gpus" or "nics" of its own). A PCI node, GPU or NIC
// without "numa" is on its parent's (its PCI node's) NUMA node; a "numa" that
// contradicts it is an error. "numa_nodes" defaults to the highest NUMA node
// named plus one. Bus ids go through NormalizeBusId. Rails and each GPU's NIC
// are not part of the spec: AssignNics derives them. Unknown keys are errors
// (a typo must not pass silently). Every fact gets Source::kJsonSpec.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_JSON_SPEC_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_JSON_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/model.h"

namespace trirace::topo {

// A System from the text of a spec. Errors name `origin`, the JSON path and
// what was expected: "bed.json: hosts[1].nics[0].gbps: expected a number".
absl::StatusOr<System> ParseJsonSpec(absl::string_view text, absl::string_view origin);

// The spec of `system` (round-trips through ParseJsonSpec).
std::string ToJsonSpec(const System& system);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_JSON_SPEC_H_
