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
  // The first required entry point the library lacks, in this order.
  const char* missing = nullptr;
  const auto need = [&](auto& fn, const char* symbol) {
    if (!sym(fn, symbol) && missing == nullptr) missing = symbol;
  };
  need(a.init, "nvmlInit_v2");
  need(a.shutdown, "nvmlShutdown");
  need(a.count, "nvmlDeviceGetCount_v2");
  need(a.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  need(a.pci_info, "nvmlDeviceGetPciInfo_v3");
  need(a.link_state, "nvmlDeviceGetNvLinkState");
  need(a.remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
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
