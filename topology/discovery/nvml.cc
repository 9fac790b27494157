#include "topology/discovery/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "topology/discovery/sysfs.h"

namespace trirace::topo {
namespace {

// The few NVML declarations used here, from the public NVML API reference
// (no nvml.h is needed to build).
namespace nvml {
using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t
using EnableState = int;   // nvmlEnableState_t
constexpr EnableState kFeatureEnabled = 1;
using NvLinkDeviceType = int;  // nvmlIntNvLinkDeviceType_t
constexpr NvLinkDeviceType kNvLinkDeviceGpu = 0;
constexpr NvLinkDeviceType kNvLinkDeviceSwitch = 2;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (R525 and later)

struct PciInfo {  // nvmlPciInfo_t, as filled by the _v3 / _v2 calls below
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_subsystem_id;
  char bus_id[32];
};
}  // namespace nvml

struct DlClose {
  void operator()(void* handle) const { dlclose(handle); }
};
using LibraryHandle = std::unique_ptr<void, DlClose>;

struct Nvml {
  nvml::Return (*init)() = nullptr;
  nvml::Return (*shutdown)() = nullptr;
  nvml::Return (*count)(unsigned*) = nullptr;
  nvml::Return (*handle_by_index)(unsigned, nvml::Device*) = nullptr;
  nvml::Return (*pci_info)(nvml::Device, nvml::PciInfo*) = nullptr;
  nvml::Return (*link_state)(nvml::Device, unsigned, nvml::EnableState*) = nullptr;
  nvml::Return (*remote_pci)(nvml::Device, unsigned, nvml::PciInfo*) = nullptr;
  // Optional.
  nvml::Return (*remote_type)(nvml::Device, unsigned, nvml::NvLinkDeviceType*) = nullptr;
  const char* (*error_string)(nvml::Return) = nullptr;

  // Resolves the entry points; the name of the first missing required one, or "".
  std::string Resolve(void* lib) {
    const auto sym = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      return fn != nullptr;
    };
    sym(remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    sym(error_string, "nvmlErrorString");
    if (!sym(init, "nvmlInit_v2")) return "nvmlInit_v2";
    if (!sym(shutdown, "nvmlShutdown")) return "nvmlShutdown";
    if (!sym(count, "nvmlDeviceGetCount_v2")) return "nvmlDeviceGetCount_v2";
    if (!sym(handle_by_index, "nvmlDeviceGetHandleByIndex_v2")) return "nvmlDeviceGetHandleByIndex_v2";
    if (!sym(pci_info, "nvmlDeviceGetPciInfo_v3")) return "nvmlDeviceGetPciInfo_v3";
    if (!sym(link_state, "nvmlDeviceGetNvLinkState")) return "nvmlDeviceGetNvLinkState";
    if (!sym(remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2")) return "nvmlDeviceGetNvLinkRemotePciInfo_v2";
    return "";
  }

  // "NVML_ERROR_... text (n)" where the library has nvmlErrorString.
  std::string Error(nvml::Return rc) const {
    const char* text = error_string != nullptr ? error_string(rc) : nullptr;
    return text != nullptr ? absl::StrCat(text, " (", rc, ")") : absl::StrCat("error ", rc);
  }
};

// nvmlInit_v2 .. nvmlShutdown.
class Session {
 public:
  explicit Session(const Nvml& api) : api_(api), rc_(api.init()) {}
  ~Session() {
    if (rc_ == nvml::kSuccess) api_.shutdown();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  nvml::Return rc() const { return rc_; }

 private:
  const Nvml& api_;
  const nvml::Return rc_;
};

// The bus id NVML gives, normalised; from the numbers when the text is empty.
std::string BusId(const nvml::PciInfo& info) {
  const std::string text(info.bus_id, strnlen(info.bus_id, sizeof(info.bus_id)));
  if (!text.empty()) return NormalizeBusId(text);
  return absl::StrFormat("%04x:%02x:%02x.0", info.domain, info.bus, info.device);
}

// One GPU's active links: the far end's bus id, or "nvswitch"; "" for a
// far end that is neither (a CPU).
struct Link {
  std::string remote;
  nvml::NvLinkDeviceType type = -1;  // -1: not said
};

std::vector<Link> ActiveLinks(const Nvml& api, nvml::Device dev) {
  std::vector<Link> links;
  for (unsigned link = 0; link < nvml::kMaxLinks; ++link) {
    nvml::EnableState state = 0;
    if (api.link_state(dev, link, &state) != nvml::kSuccess || state != nvml::kFeatureEnabled) continue;
    nvml::PciInfo remote{};
    if (api.remote_pci(dev, link, &remote) != nvml::kSuccess) continue;
    Link l;
    l.remote = BusId(remote);
    nvml::NvLinkDeviceType type = -1;
    if (api.remote_type != nullptr && api.remote_type(dev, link, &type) == nvml::kSuccess) l.type = type;
    links.push_back(std::move(l));
  }
  return links;
}

}  // namespace

NvmlDiscovery DiscoverNvml(absl::string_view library_name) {
  NvmlDiscovery d;
  const std::string library(library_name);
  const LibraryHandle lib(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (lib == nullptr) {
    d.notes.push_back(absl::StrCat("NVML: ", library, " not found"));
    return d;
  }
  Nvml api;
  if (const std::string missing = api.Resolve(lib.get()); !missing.empty()) {
    d.notes.push_back(absl::StrCat("NVML: ", library, " has no ", missing));
    return d;
  }
  const Session session(api);
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
    g.pci = BusId(info);
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
