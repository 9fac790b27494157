// hwloc discovery: the PCIe tree, NUMA nodes and OS devices of this machine
// (hwloc_topology_load with the important I/O devices kept), or of an hwloc
// XML export (`lstopo --of xml`, read through hwloc_topology_set_xmlbuffer
// with every I/O object kept).
//
// What becomes what:
//   NUMANode objects                     Host::numa_nodes
//   PCI-to-PCI bridges                   PciNode{is_switch = true}, NCCL's
//                                        way: a switch is its upstream port;
//                                        the downstream port under it (and a
//                                        root port above it) is no node, so a
//                                        device's parent is the bridge two
//                                        levels up (-1: under the CPU)
//   PCI devices of class 0x03xx from     Gpu (and a PciNode), pci = bus id;
//     NVIDIA / AMD, or with a CoProc      a BMC's VGA is no GPU
//     OS device (cuda0, opencl0d0)
//   PCI devices with an OS device of
//     type OpenFabrics (mlx5_0)          Nic per port ("Port<N>State" infos),
//                                        InfiniBand unless class 0x0200
//                                        (RoCE) or a "Port<N>LinkLayer" /
//                                        "LinkLayer" info says Ethernet
//     else Network (eth0)                Nic, Ethernet (0x0207: IPoIB, IB)
//     else class 0x0200 / 0x0207 alone   Nic named by its bus id
//   OpenFabrics / Network OS devices
//     outside the PCI tree               Nic without bus id
//   pci_link_speed attribute (GB/s)      PciNode::link_gbps (x8)
// Only the GPUs, the NICs and the switches above them become PCI nodes. The
// NUMA node of a device is the first NUMA node of its CPU-side ancestor.
// GPUs and NICs are in bus id order; `dev` is left -1 (CUDA's numbering is
// not hwloc's). hwloc knows no NIC port rate (gbps stays 0) and no NVLink.
// Facts "pci", "gpus", "nics" get Source::kHwloc.
//
// Before hwloc reads an XML text, tinyxml2 checks it (well-formed, root
// <topology>: errors give the line) and it is written again in the layout
// hwloc itself writes: hwloc's own reader (built without libxml2, as on
// Debian) takes nothing else (no comments, blanks before the root or inside
// tags, CR LF line ends, other entities). What hwloc 2.9 would refuse inside
// an <object> (an element or attribute it does not know, text), leaking the
// object it was reading, is refused first with its line, and so is an
// object with a set but not its complete set, on which hwloc 2.9 crashes.
//
// hwloc is optional at run time: the backend is a module,
// libtrirace-topo-hwloc.so (hwloc_module.cc, the one TriRace object linked
// with libhwloc), loaded on first use from <dir of this program>/../lib,
// the install layout's library folder, or the dynamic linker's path. Where
// it or libhwloc is missing, both functions return Unavailable ("hwloc
// module not loaded: <dlerror>") and local discovery uses sysfs, saying so.
// Built only where hwloc was found (TRIRACE_HAVE_HWLOC); without it both
// functions return Unimplemented: "built without hwloc" (ParseHwlocXml's
// message names `origin` too).
//
// Thread safety: the module is loaded once (absl::call_once); the functions
// share no other state; safe from several threads.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_HWLOC_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_HWLOC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/model.h"

struct TriraceHwlocApiV1;

namespace trirace::topo {

// This machine as hwloc sees it. The host's key is left empty.
absl::StatusOr<Host> DiscoverHwloc();

// One host from the text of an hwloc XML export. Errors name `origin` and
// what was wrong ("node.xml: not an hwloc XML export: ..."). The host's key
// is left empty.
absl::StatusOr<Host> ParseHwlocXml(absl::string_view text, absl::string_view origin);

// Where the module is looked for: the first existing of <exe dir>/../lib and
// the install layout's library folder, else its bare name.
std::string HwlocModulePath();
// Loads the module at `path` (not cached; DiscoverHwloc and ParseHwlocXml use
// HwlocModulePath() once). Unavailable with dlerror's text if it or libhwloc
// cannot be loaded; FailedPrecondition if it is not this build's module.
absl::StatusOr<const TriraceHwlocApiV1*> OpenHwlocModule(const std::string& path);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_HWLOC_H_
