#include "topology/discovery/local.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/affinity.h"
#include "topology/discovery/sysfs.h"
#if TRIRACE_HAVE_HWLOC
#include "topology/discovery/hwloc.h"
#endif

namespace trirace::topo {

LocalDiscovery DiscoverLocalHost(const LocalDiscoveryOptions& options) {
  LocalDiscovery d;
#if TRIRACE_HAVE_HWLOC
  if (options.use_hwloc) {
    absl::StatusOr<Host> h = DiscoverHwloc();
    if (h.ok()) {
      d.host = *std::move(h);
    } else {
      d.notes.push_back(absl::StrCat("hwloc: ", h.status().message(), "; the PCIe tree comes from sysfs"));
    }
  }
#else
  if (options.use_hwloc) d.notes.push_back("hwloc: built without hwloc; the PCIe tree comes from sysfs");
#endif
  AddSysfsFacts(options.sysfs_root, d.host);
  if (d.host.gpus.empty()) d.notes.push_back("no GPU found");
  bool rdma = false;
  for (const SysfsNic& n : ListSysfsNics(options.sysfs_root)) rdma = rdma || n.rdma;
  if (!rdma) d.notes.push_back("no InfiniBand device");
  if (d.host.nics.empty()) d.notes.push_back("no NIC with a PCI device found");
  AssignNics(d.host);
  return d;
}

}  // namespace trirace::topo
