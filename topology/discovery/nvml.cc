#include "topology/discovery/nvml.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/discovery/sysfs.h"
#include "topology/nvml_api.h"

namespace trirace::topo {
namespace {

// One GPU's active links: the far end's bus id, or "nvswitch"; "" for a
// far end that is neither (a CPU).
struct Link {
  std::string remote;
  nvml::NvLinkDeviceType type = -1;  // -1: not said
};

std::vector<Link> ActiveLinks(const NvmlApi& api, nvml::Device dev) {
  std::vector<Link> links;
  for (unsigned link = 0; link < nvml::kMaxLinks; ++link) {
    nvml::EnableState state = 0;
    if (api.link_state(dev, link, &state) != nvml::kSuccess || state != nvml::kFeatureEnabled) continue;
    nvml::PciInfo remote{};
    if (api.remote_pci(dev, link, &remote) != nvml::kSuccess) continue;
    Link l;
    l.remote = NvmlBusId(remote);
    nvml::NvLinkDeviceType type = -1;
    if (api.remote_type != nullptr && api.remote_type(dev, link, &type) == nvml::kSuccess) l.type = type;
    links.push_back(std::move(l));
  }
  return links;
}

}  // namespace

NvmlDiscovery DiscoverNvml(absl::string_view library_name) {
  NvmlDiscovery d;
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> lib = NvmlLibrary::Open(library_name);
  if (!lib.ok()) {
    d.notes.push_back(absl::StrCat("NVML: ", lib.status().message()));
    return d;
  }
  const NvmlApi& api = (*lib)->api();
  const NvmlSession session(api);
  if (session.rc() != nvml::kSuccess) {
    d.notes.push_back(absl::StrCat("NVML: nvmlInit_v2 failed: ", api.Error(session.rc())));
    return d;
  }
  unsigned count = 0;
  if (const nvml::Return rc = api.count(&count); rc != nvml::kSuccess) {
    d.notes.push_back(absl::StrCat("NVML: nvmlDeviceGetCount_v2 failed: ", api.Error(rc)));
    return d;
  }
  std::vector<std::vector<Link>> links;
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device dev = nullptr;
    nvml::PciInfo info{};
    nvml::Return rc = api.handle_by_index(i, &dev);
    if (rc == nvml::kSuccess) rc = api.pci_info(dev, &info);
    if (rc != nvml::kSuccess) {
      d.notes.push_back(absl::StrCat("NVML: GPU ", i, ": ", api.Error(rc)));
      continue;
    }
    NvmlGpu g;
    g.pci = NvmlBusId(info);
    d.gpus.push_back(std::move(g));
    links.push_back(ActiveLinks(api, dev));
  }
  std::set<std::string> gpu_ids;
  for (const NvmlGpu& g : d.gpus) gpu_ids.insert(g.pci);
  for (size_t i = 0; i < d.gpus.size(); ++i) {
    NvmlGpu& g = d.gpus[i];
    for (const Link& l : links[i]) {
      std::string target;
      if (l.type == nvml::kNvLinkDeviceSwitch) {
        target = "nvswitch";
      } else if (l.type == nvml::kNvLinkDeviceGpu || gpu_ids.count(l.remote) > 0) {
        target = l.remote;
      } else if (l.type == -1) {
        target = "nvswitch";  // the driver does not say: no GPU NVML lists
      } else {
        continue;  // a CPU (IBM NPU) or unknown
      }
      auto it = std::find_if(g.nvlinks.begin(), g.nvlinks.end(),
                             [&](const Gpu::NvLink& n) { return n.target == target; });
      if (it == g.nvlinks.end()) {
        g.nvlinks.push_back({target, 1});
      } else {
        ++it->count;
      }
      ++g.active_links;
    }
  }
  if (count == 0) d.notes.push_back("NVML: no GPU");
  return d;
}

int AddNvmlFacts(const std::vector<NvmlGpu>& gpus, Host& host) {
  int added = 0;
  for (const NvmlGpu& g : gpus) {
    if (!g.nvlinks.empty()) NoteFirst(host, "nvlink", Source::kNvml);
    const int at = host.FindGpu(g.pci);
    if (at >= 0) {
      if (host.gpus[at].nvlinks.empty()) host.gpus[at].nvlinks = g.nvlinks;
      continue;
    }
    NoteFirst(host, "gpus", Source::kNvml);
    Gpu gpu;
    gpu.pci = g.pci;
    gpu.nvlinks = g.nvlinks;
    host.gpus.push_back(std::move(gpu));
    ++added;
  }
  return added;
}

}  // namespace trirace::topo
