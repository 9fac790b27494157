// NCCL topology XML: the format NCCL reads from NCCL_TOPO_FILE and writes to
// NCCL_TOPO_DUMP_FILE (cloud providers publish these for their GPU VMs).
//
//   <system version="1">
//     <cpu numaid="0" affinity="..." arch="x86_64" vendor="GenuineIntel">
//       <pci busid="0000:17:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
//         <pci busid="0000:18:00.0" class="0x030200" ...>      a GPU
//           <gpu dev="0" sm="80" rank="0" gdr="1">
//             <nvlink target="0000:c0:00.0" count="12" tclass="0x068000"/>
//           </gpu>
//         </pci>
//         <pci busid="0000:19:00.0" class="0x020700" ...>      an IB NIC
//           <nic><net name="mlx5_0" dev="0" speed="200000" port="1" .../></nic>
//         </pci>
//       </pci>
//     </cpu>
//   </system>
//
// Classes: 0x0604xx bridge / switch, 0x0302xx or 0x0300xx GPU, 0x0207xx
// InfiniBand NIC, 0x0200xx Ethernet NIC (NCCL's src/graph/xml.cc). Many
// published files hold only the PCI tree (no <gpu>/<nic> children): GPUs and
// NICs are then known by class and bus id only, and a NIC is named by its
// bus id. Speeds: <net speed> is Mbit/s; PCIe link_speed "X GT/s" times
// link_width, less the line encoding (128b/130b from 8 GT/s, 8b/10b below).
// NVLink targets that are NVSwitches (tclass 0x0680xx) become "nvswitch";
// NCCL lists one <nvlink> per NVSwitch chip, so their counts are summed.
//
// Parsed with tinyxml2. Every fact gets Source::kNcclXml.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_NCCL_XML_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_NCCL_XML_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/model.h"

namespace trirace::topo {

// One host from the text of an NCCL topology XML. `origin` names the file in
// errors, which also give the line and what was expected:
//   "h100.xml:12: <pci> without busid".
// The host's key is left empty (the caller sets it).
absl::StatusOr<Host> ParseNcclTopoXml(absl::string_view text, absl::string_view origin);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_NCCL_XML_H_
