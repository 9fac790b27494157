#include "scheduler/occupancy_sampler.h"

#include "common/logging.h"

namespace trirace::sched {

void OccupancySampler::SetReader(std::unique_ptr<OccupancyReader> reader,
                                 std::vector<std::pair<std::string, LinkId>> device_links) {
  reader_ = std::move(reader);
  device_links_ = std::move(device_links);
  meter_ = RateMeter();
}

std::vector<LinkRate> OccupancySampler::Sample() {
  std::vector<LinkRate> out;
  if (reader_ == nullptr) return out;
  absl::StatusOr<OccupancySnapshot> snap = reader_->Read();
  if (!snap.ok()) {
    if (absl::IsUnavailable(snap.status())) {
      TRIRACE_TRACE(SCHED, "occupancy reader %s: %s", std::string(reader_->name()), snap.status().ToString());
    } else if (!warned_) {
      warned_ = true;
      TRIRACE_WARN(SCHED, "occupancy reader %s: %s (samples are skipped until it recovers)",
                   std::string(reader_->name()), snap.status().ToString());
    }
    return out;
  }
  for (const DeviceRate& r : meter_.Update(*snap)) {
    for (const auto& [device, link] : device_links_) {
      if (device == r.device) out.push_back({link, r.bytes_per_s, r.ours_bytes_per_s, r.others_urgent_bytes});
    }
  }
  return out;
}

}  // namespace trirace::sched
