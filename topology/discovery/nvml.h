// NVML discovery: the NVIDIA GPUs of this machine by PCI bus id and their
// active NVLinks, from libnvidia-ml.so.1 loaded at run time with dlopen (no
// NVML header is needed to build; nothing links the library).
//
//   nvmlInit_v2 / nvmlShutdown                    around every call
//   nvmlDeviceGetCount_v2, ..GetHandleByIndex_v2  every GPU NVML sees
//   nvmlDeviceGetPciInfo_v3                       its bus id
//   nvmlDeviceGetNvLinkState (links 0..17)        which links are active
//   nvmlDeviceGetNvLinkRemotePciInfo_v2           the bus id at the far end
//   nvmlDeviceGetNvLinkRemoteDeviceType           GPU or switch, where the
//     (optional)                                  driver has it
//
// A link's target is the far end's bus id when that is one of the GPUs,
// "nvswitch" when the far end is an NVSwitch (the driver says so, or,
// without the optional call, the bus id is no GPU NVML lists); a link to
// anything else (a CPU) is left out. Links to one target are counted
// (Gpu::NvLink). The per-link rate is not read (Gpu::nvlink_gbps stays 0,
// unknown): NVML's link version numbers do not map to rates the same way
// across driver releases.
//
// An absent library ("NVML: libnvidia-ml.so.1 not found"), a missing entry
// point, a failing nvmlInit (no driver, no GPU) or a failing call on one GPU
// gives fewer GPUs (possibly none) and a line in `notes`, never an error
// or a crash.
//
// Thread safety: no shared state; NVML is thread-safe, and its init and
// shutdown are reference counted, so DiscoverNvml may run on several
// threads and next to other NVML users in the process.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_NVML_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_NVML_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/model.h"

namespace trirace::topo {

struct NvmlGpu {
  std::string pci;                    // normalised bus id
  std::vector<Gpu::NvLink> nvlinks;   // by target, in link order of first use
  int active_links = 0;               // the links counted in `nvlinks`
};

struct NvmlDiscovery {
  std::vector<NvmlGpu> gpus;       // NVML's order (bus id order)
  std::vector<std::string> notes;  // "NVML: ..." lines: what was absent or failed
};

// The GPUs that `library` (a name dlopen resolves, or a path) reports.
NvmlDiscovery DiscoverNvml(absl::string_view library = "libnvidia-ml.so.1");

// Adds `gpus` to `host` by the merge rule of local.h: a GPU already listed
// (same bus id) gets the NVLinks where it has none; a GPU not
// listed is added outside the PCIe tree, NUMA node unknown. Records no
// provenance (model.h has no Source for NVML); returns the number of GPUs
// added.
int AddNvmlFacts(const std::vector<NvmlGpu>& gpus, Host& host);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_NVML_H_
