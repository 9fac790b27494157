#include "scheduler/occupancy_reader.h"

#include <algorithm>

namespace trirace::sched {

std::vector<DeviceRate> RateMeter::Update(const OccupancySnapshot& snap) {
  std::vector<DeviceRate> out;
  for (const DeviceCounters& c : snap.devices) {
    auto it = last_.find(c.device);
    if (it != last_.end() && snap.time_ns > it->second.time_ns) {
      const DeviceCounters& p = it->second.counters;
      const bool monotone = c.tx_bytes >= p.tx_bytes && c.rx_bytes >= p.rx_bytes &&
                            (!c.has_ours || (p.has_ours && c.ours_tx_bytes >= p.ours_tx_bytes &&
                                             c.ours_rx_bytes >= p.ours_rx_bytes));
      if (monotone) {
        const double dt = static_cast<double>(snap.time_ns - it->second.time_ns) * 1e-9;
        DeviceRate r{c.device, 0, -1};
        r.bytes_per_s = static_cast<double>(std::max(c.tx_bytes - p.tx_bytes, c.rx_bytes - p.rx_bytes)) / dt;
        if (c.has_ours) {
          r.ours_bytes_per_s =
              static_cast<double>(std::max(c.ours_tx_bytes - p.ours_tx_bytes, c.ours_rx_bytes - p.ours_rx_bytes)) / dt;
        }
        out.push_back(std::move(r));
      }
    }
    last_[c.device] = {c, snap.time_ns};
  }
  return out;
}

}  // namespace trirace::sched
