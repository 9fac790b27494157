// NVML through dlopen: the few declarations TriRace uses, from the public
// NVML API reference (no nvml.h is needed to build, nothing links
// libnvidia-ml), the library handle and an init/shutdown session. Shared
// by NVML discovery (discovery/nvml.h) and the NVLink monitor
// (monitors/nvlink_counters.h).
//
//   absl::StatusOr<std::unique_ptr<NvmlLibrary>> lib = NvmlLibrary::Open("libnvidia-ml.so.1");
//   NvmlSession session((*lib)->api());
//   if (session.rc() == nvml::kSuccess) ... (*lib)->api().count(&n) ...
//
// Thread safety: an NvmlLibrary is immutable once opened; NVML itself is
// thread-safe and reference counts init and shutdown, so sessions may
// overlap across threads and with other NVML users in the process.
#ifndef TRIRACE_TOPOLOGY_NVML_API_H_
#define TRIRACE_TOPOLOGY_NVML_API_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trirace::topo {
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

struct PciInfo {  // nvmlPciInfo_t, as filled by the _v3 / _v2 calls
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_subsystem_id;
  char bus_id[32];
};

// nvmlFieldValue_t, for nvmlDeviceGetFieldValues.
struct FieldValue {
  unsigned field_id;
  unsigned scope_id;  // the NVLink for per-link fields
  long long timestamp;
  long long latency_usec;
  int value_type;   // nvmlValueType_t
  Return nvml_return;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
  } value;
};
// Cumulative NVLink data payload per link, in KiB (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX).
constexpr unsigned kFieldNvLinkDataTxKib = 138;
constexpr unsigned kFieldNvLinkDataRxKib = 139;

}  // namespace nvml

// The entry points. Required ones are resolved by Open; optional ones are
// nullptr where the library lacks them.
struct NvmlApi {
  nvml::Return (*init)() = nullptr;
  nvml::Return (*shutdown)() = nullptr;
  nvml::Return (*count)(unsigned*) = nullptr;
  nvml::Return (*handle_by_index)(unsigned, nvml::Device*) = nullptr;
  nvml::Return (*pci_info)(nvml::Device, nvml::PciInfo*) = nullptr;
  nvml::Return (*link_state)(nvml::Device, unsigned, nvml::EnableState*) = nullptr;
  nvml::Return (*remote_pci)(nvml::Device, unsigned, nvml::PciInfo*) = nullptr;
  // Optional.
  nvml::Return (*remote_type)(nvml::Device, unsigned, nvml::NvLinkDeviceType*) = nullptr;
  nvml::Return (*field_values)(nvml::Device, int, nvml::FieldValue*) = nullptr;
  const char* (*error_string)(nvml::Return) = nullptr;

  // "text (n)" where the library has nvmlErrorString, else "error n".
  std::string Error(nvml::Return rc) const;
};

class NvmlLibrary {
 public:
  // dlopens `name` (a name the dynamic linker resolves, or a path).
  // NotFound "<name> not found" when it cannot be loaded; FailedPrecondition
  // "<name> has no <entry point>" when a required one is missing.
  static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Open(absl::string_view name);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const { return api_; }

 private:
  explicit NvmlLibrary(void* handle) : handle_(handle) {}
  void* handle_;
  NvmlApi api_;
};

// nvmlInit_v2 for as long as it lives, nvmlShutdown after (when init worked).
class NvmlSession {
 public:
  explicit NvmlSession(const NvmlApi& api) : api_(api), rc_(api.init()) {}
  ~NvmlSession() {
    if (rc_ == nvml::kSuccess) api_.shutdown();
  }
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;
  nvml::Return rc() const { return rc_; }

 private:
  const NvmlApi& api_;
  const nvml::Return rc_;
};

// The bus id NVML gives, normalised; from the numbers when the text is empty.
std::string NvmlBusId(const nvml::PciInfo& info);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_NVML_API_H_
