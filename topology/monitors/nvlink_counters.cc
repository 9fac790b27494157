#include "topology/monitors/nvlink_counters.h"

#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/model.h"
#include "topology/nvml_api.h"

namespace trirace::topo {
namespace {

struct NvlinkGpu {
  std::string device;  // NvlinkDeviceName
  nvml::Device handle = nullptr;
  std::vector<nvml::FieldValue> fields;  // tx and rx of each active link
};

class NvlinkCountersReader final : public OccupancyReader {
 public:
  NvlinkCountersReader(std::unique_ptr<NvmlLibrary> lib, const Clock* clock)
      : lib_(std::move(lib)), session_(lib_->api()), clock_(clock) {}

  std::string_view name() const override { return "nvml-nvlink"; }

  absl::StatusOr<OccupancySnapshot> Read() override {
    OccupancySnapshot snap;
    snap.time_ns = clock_->NowNs();
    for (NvlinkGpu& g : gpus_) {
      absl::StatusOr<DeviceCounters> c = ReadGpu(g);
      if (!c.ok()) return c.status();
      snap.devices.push_back(*std::move(c));
    }
    return snap;
  }

  nvml::Return init_rc() const { return session_.rc(); }
  const NvmlApi& api() const { return lib_->api(); }
  void Add(NvlinkGpu g) { gpus_.push_back(std::move(g)); }
  bool empty() const { return gpus_.empty(); }

  absl::StatusOr<DeviceCounters> ReadGpu(NvlinkGpu& g) const {
    const NvmlApi& api = lib_->api();
    for (nvml::FieldValue& f : g.fields) f.nvml_return = nvml::kSuccess;
    if (const nvml::Return rc = api.field_values(g.handle, static_cast<int>(g.fields.size()), g.fields.data());
        rc != nvml::kSuccess) {
      return absl::FailedPreconditionError(
          absl::StrCat(g.device, ": nvmlDeviceGetFieldValues failed: ", api.Error(rc)));
    }
    DeviceCounters c;
    c.device = g.device;
    for (const nvml::FieldValue& f : g.fields) {
      if (f.nvml_return != nvml::kSuccess) {
        return absl::FailedPreconditionError(absl::StrCat(g.device, " link ", f.scope_id, " field ", f.field_id, ": ",
                                                          api.Error(f.nvml_return)));
      }
      (f.field_id == nvml::kFieldNvLinkDataTxKib ? c.tx_bytes : c.rx_bytes) += f.value.ull * 1024;
    }
    return c;
  }

 private:
  std::unique_ptr<NvmlLibrary> lib_;
  const NvmlSession session_;
  const Clock* clock_;
  std::vector<NvlinkGpu> gpus_;
};

}  // namespace

std::string NvlinkDeviceName(absl::string_view gpu_pci) { return absl::StrCat("nvlink:", NormalizeBusId(gpu_pci)); }

absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenNvlinkCountersReader(const std::vector<std::string>& gpu_pcis,
                                                                          absl::string_view library,
                                                                          const Clock* clock) {
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> lib = NvmlLibrary::Open(library);
  if (!lib.ok()) return lib.status();
  if ((*lib)->api().field_values == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(library, " has no nvmlDeviceGetFieldValues"));
  }
  auto reader = std::make_unique<NvlinkCountersReader>(*std::move(lib), clock);
  const NvmlApi& api = reader->api();
  if (reader->init_rc() != nvml::kSuccess) {
    return absl::FailedPreconditionError(absl::StrCat("nvmlInit_v2 failed: ", api.Error(reader->init_rc())));
  }
  std::set<std::string> wanted;
  for (const std::string& pci : gpu_pcis) wanted.insert(NormalizeBusId(pci));
  unsigned count = 0;
  if (const nvml::Return rc = api.count(&count); rc != nvml::kSuccess) {
    return absl::FailedPreconditionError(absl::StrCat("nvmlDeviceGetCount_v2 failed: ", api.Error(rc)));
  }
  for (unsigned i = 0; i < count; ++i) {
    NvlinkGpu g;
    nvml::PciInfo info{};
    if (api.handle_by_index(i, &g.handle) != nvml::kSuccess || api.pci_info(g.handle, &info) != nvml::kSuccess) {
      continue;
    }
    const std::string pci = NvmlBusId(info);
    if (wanted.count(pci) == 0) continue;
    g.device = NvlinkDeviceName(pci);
    for (unsigned link = 0; link < nvml::kMaxLinks; ++link) {
      nvml::EnableState state = 0;
      if (api.link_state(g.handle, link, &state) != nvml::kSuccess || state != nvml::kFeatureEnabled) continue;
      for (unsigned field : {nvml::kFieldNvLinkDataTxKib, nvml::kFieldNvLinkDataRxKib}) {
        nvml::FieldValue f{};
        f.field_id = field;
        f.scope_id = link;
        g.fields.push_back(f);
      }
    }
    if (g.fields.empty()) continue;
    // A first read now: counters NVML cannot give fail here, not in the engine.
    if (absl::StatusOr<DeviceCounters> c = reader->ReadGpu(g); !c.ok()) return c.status();
    reader->Add(std::move(g));
  }
  if (reader->empty()) {
    return absl::NotFoundError(absl::StrCat("no active NVLink on GPU(s) ", absl::StrJoin(wanted, ", "),
                                            " (NVML lists ", count, " GPU(s))"));
  }
  return reader;
}

}  // namespace trirace::topo
