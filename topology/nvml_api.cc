#include "topology/nvml_api.h"

#include <dlfcn.h>

#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "topology/model.h"

namespace trirace::topo {

std::string NvmlApi::Error(nvml::Return rc) const {
  const char* text = error_string != nullptr ? error_string(rc) : nullptr;
  return text != nullptr ? absl::StrCat(text, " (", rc, ")") : absl::StrCat("error ", rc);
}

absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(absl::string_view name_view) {
  const std::string name(name_view);
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::NotFoundError(absl::StrCat(name, " not found"));
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle));
  NvmlApi& a = lib->api_;
  const auto sym = [handle](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
    return fn != nullptr;
  };
  sym(a.remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
  sym(a.field_values, "nvmlDeviceGetFieldValues");
  sym(a.error_string, "nvmlErrorString");
  const char* missing = nullptr;
  if (!sym(a.init, "nvmlInit_v2")) {
    missing = "nvmlInit_v2";
  } else if (!sym(a.shutdown, "nvmlShutdown")) {
    missing = "nvmlShutdown";
  } else if (!sym(a.count, "nvmlDeviceGetCount_v2")) {
    missing = "nvmlDeviceGetCount_v2";
  } else if (!sym(a.handle_by_index, "nvmlDeviceGetHandleByIndex_v2")) {
    missing = "nvmlDeviceGetHandleByIndex_v2";
  } else if (!sym(a.pci_info, "nvmlDeviceGetPciInfo_v3")) {
    missing = "nvmlDeviceGetPciInfo_v3";
  } else if (!sym(a.link_state, "nvmlDeviceGetNvLinkState")) {
    missing = "nvmlDeviceGetNvLinkState";
  } else if (!sym(a.remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2")) {
    missing = "nvmlDeviceGetNvLinkRemotePciInfo_v2";
  }
  if (missing != nullptr) return absl::FailedPreconditionError(absl::StrCat(name, " has no ", missing));
  return lib;
}

NvmlLibrary::~NvmlLibrary() { dlclose(handle_); }

std::string NvmlBusId(const nvml::PciInfo& info) {
  const std::string text(info.bus_id, strnlen(info.bus_id, sizeof(info.bus_id)));
  if (!text.empty()) return NormalizeBusId(text);
  return absl::StrFormat("%04x:%02x:%02x.0", info.domain, info.bus, info.device);
}

}  // namespace trirace::topo
