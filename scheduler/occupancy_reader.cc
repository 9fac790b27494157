#include "scheduler/occupancy_reader.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace trirace::sched {

std::vector<DeviceRate> RateMeter::Update(const OccupancySnapshot& snap) {
  std::vector<DeviceRate> out;
  for (const DeviceCounters& c : snap.devices) {
    // Gaining or losing "ours" changes the series' shape: it restarts. So
    // does a new source (another key: nothing to subtract from).
    const std::string key = c.series == 0 ? c.device : absl::StrCat(c.device, "#", c.series);
    std::vector<double> r =
        c.has_ours ? rates_.Update(key, snap.time_ns, {c.tx_bytes, c.rx_bytes, c.ours_tx_bytes, c.ours_rx_bytes})
                   : rates_.Update(key, snap.time_ns, {c.tx_bytes, c.rx_bytes});
    if (r.empty()) continue;
    DeviceRate rate{c.device, std::max(r[0], r[1]), -1};
    if (c.has_ours) rate.ours_bytes_per_s = std::max(r[2], r[3]);
    rate.others_urgent_bytes = c.others_urgent_send_bytes;
    out.push_back(std::move(rate));
  }
  return out;
}

}  // namespace trirace::sched
