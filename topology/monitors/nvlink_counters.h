// NVLink occupancy from NVML: per GPU, the cumulative NVLink data payload
// of its active links (nvmlDeviceGetFieldValues with
// NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX, KiB per link, scope = the
// link), summed and reported as one device named NvlinkDeviceName(bus id),
// which OpLinks maps to that GPU's nvl-tx / nvl-rx links.
//
// Like the Ethernet and InfiniBand counters these count every byte on the
// links (other processes' and jobs' too): has_ours is false. NVML is loaded
// with dlopen (topology/nvml_api.h), so the shim gains no dependency, and
// initialised once for the reader's life.
//
// Thread safety: one thread at a time.
#ifndef TRIRACE_TOPOLOGY_MONITORS_NVLINK_COUNTERS_H_
#define TRIRACE_TOPOLOGY_MONITORS_NVLINK_COUNTERS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"
#include "common/link_counters.h"

namespace trirace::topo {

// "nvlink:<normalised bus id>".
std::string NvlinkDeviceName(absl::string_view gpu_pci);

// A reader over the GPUs with bus ids `gpu_pcis` that NVML lists with at
// least one active NVLink (others are left out). Fails with NotFound when
// `library` cannot be loaded or none of the GPUs has an active NVLink,
// FailedPrecondition when the library lacks nvmlDeviceGetFieldValues, NVML
// does not initialise, or the counters cannot be read (the message says
// which GPU, link and NVML error).
absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenNvlinkCountersReader(
    const std::vector<std::string>& gpu_pcis, absl::string_view library = "libnvidia-ml.so.1",
    const Clock* clock = &RealClock::Get());

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_MONITORS_NVLINK_COUNTERS_H_
