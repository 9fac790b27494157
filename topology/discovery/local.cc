#include "topology/discovery/local.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/affinity.h"
#include "topology/discovery/ibverbs.h"
#include "topology/discovery/nvml.h"
#include "topology/discovery/hwloc.h"
#include "topology/discovery/sysfs.h"

namespace trirace::topo {
namespace {

void Append(std::vector<std::string>& to, std::vector<std::string> from) {
  for (std::string& line : from) to.push_back(std::move(line));
}

// hwloc first: the PCIe tree, NUMA nodes, GPUs and NICs. Without it (not
// built, or its module or libhwloc missing here) a note says why.
void AddHwloc(LocalDiscovery& d) {
  absl::StatusOr<Host> h = DiscoverHwloc();
  if (h.ok()) {
    d.host = *std::move(h);
  } else {
    d.notes.push_back(absl::StrCat("hwloc: ", h.status().message(), "; the PCIe tree comes from sysfs"));
  }
}

// What the merged host lacks, and RDMA ports listed as NICs that are not up.
void NoteAbsences(const std::vector<SysfsNic>& sysfs, const IbverbsDiscovery& ibverbs, LocalDiscovery& d) {
  const Host& h = d.host;
  if (h.gpus.empty()) d.notes.push_back("no GPU found");
  bool rdma = !ibverbs.ports.empty();
  for (const SysfsNic& n : sysfs) rdma = rdma || n.rdma;
  if (!rdma) d.notes.push_back("no InfiniBand device");
  if (h.nics.empty()) d.notes.push_back("no NIC with a PCI device found");
  for (const Nic& nic : h.nics) {
    for (const IbverbsPort& p : ibverbs.ports) {
      if (p.device == nic.name && p.port == nic.port && !p.active) {
        d.notes.push_back(absl::StrCat(nic.name, " port ", nic.port, ": ", IbPortStateName(p.state)));
      }
    }
    if (!ibverbs.ports.empty()) continue;  // ibverbs said it
    for (const SysfsNic& s : sysfs) {
      if (s.rdma && s.name == nic.name && s.port == nic.port && !s.up) {
        d.notes.push_back(absl::StrCat(nic.name, " port ", nic.port, ": not ACTIVE"));
      }
    }
  }
}

}  // namespace

LocalDiscovery DiscoverLocalHost(const LocalDiscoveryOptions& options) {
  LocalDiscovery d;
  if (options.use_hwloc) AddHwloc(d);

  const std::vector<SysfsNic> sysfs = ListSysfsNics(options.sysfs_root);
  AddSysfsFacts(options.sysfs_root, d.host);

  IbverbsDiscovery ibverbs;
  if (options.use_ibverbs) {
    ibverbs = DiscoverIbverbs(options.ibverbs_library);
    AddIbverbsFacts(ibverbs.ports, d.host);
    Append(d.notes, std::move(ibverbs.notes));
  }

  if (options.use_nvml) {
    NvmlDiscovery nvml = DiscoverNvml(options.nvml_library);
    const int added = AddNvmlFacts(nvml.gpus, d.host);
    Append(d.notes, std::move(nvml.notes));
    if (!nvml.gpus.empty()) {
      int links = 0;
      for (const NvmlGpu& g : nvml.gpus) links += g.active_links;
      d.notes.push_back(absl::StrCat("NVML: ", nvml.gpus.size(), " GPU(s) (", added, " not seen by hwloc or sysfs), ",
                                     links, " active NVLink(s)"));
    }
  }

  NoteAbsences(sysfs, ibverbs, d);
  AssignNics(d.host);
  return d;
}

}  // namespace trirace::topo
