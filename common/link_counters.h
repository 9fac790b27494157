// Link counters: the one interface every occupancy monitor implements —
// cumulative byte counters per network device, read on demand — and what
// it returns. The scheduler's engine samples a reader and turns successive
// snapshots into rates (scheduler/occupancy_reader.h RateMeter); the
// backends live with what they measure:
//   topology/monitors/net_stats.h    Ethernet: /sys/class/net/<if>/statistics
//   topology/monitors/ib_counters.h  InfiniBand / RoCE port counters
//   topology/monitors/nvlink_counters.h  NVLink, from NVML
//   interpose/network/plugin_occupancy.h     the net plugin's per-NIC records (the
//                                    job's own bytes, and this process's)
//
// Thread safety: a reader is used by one thread at a time.
#ifndef TRIRACE_COMMON_LINK_COUNTERS_H_
#define TRIRACE_COMMON_LINK_COUNTERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace trirace {

// Cumulative counters of one device.
struct DeviceCounters {
  std::string device{};  // interface or RDMA device name, e.g. "eth0", "mlx5_0"
  uint64_t tx_bytes = 0;
  uint64_t rx_bytes = 0;
  // The source also knows this process's own traffic on the device.
  bool has_ours = false;
  uint64_t ours_tx_bytes = 0;
  uint64_t ours_rx_bytes = 0;
  // A gauge, not a counter: bytes the job's other processes have posted to
  // send on the device as P2P or SPARSE and not yet completed (the classes
  // DENSE yields to); -1 when the source cannot tell classes or processes.
  int64_t others_urgent_send_bytes = -1;
  // Which counters these are, for a reader that changes source (the net
  // plugin's segment replacing interface counters): a device's rate series
  // restarts when its series changes, as two sources' counters cannot be
  // subtracted. 0 for readers that keep one source.
  uint32_t series = 0;
};

struct OccupancySnapshot {
  int64_t time_ns = 0;  // the reader's clock
  std::vector<DeviceCounters> devices{};
};

class OccupancyReader {
 public:
  virtual ~OccupancyReader() = default;
  virtual std::string_view name() const = 0;
  // Counters now. An error means this sample is lost, not that the reader
  // is unusable; the engine keeps sampling, and warns once unless the
  // error is kUnavailable (a transient miss, such as a publisher caught
  // mid-update).
  virtual absl::StatusOr<OccupancySnapshot> Read() = 0;
};

// One reader over several (a NIC's counters and the NVLink counters, say):
// its snapshots hold every part's devices, its name is the parts' names
// joined with '+' (as they are now: a part may change source). A part that fails is left out of that snapshot (its
// devices get no rate for the interval) and warned about once unless the
// error is kUnavailable; only when every part fails does Read() fail, with
// the first part's error. Null parts are dropped; with one part left that
// part is returned as it is.
std::unique_ptr<OccupancyReader> CombineReaders(std::vector<std::unique_ptr<OccupancyReader>> parts);

}  // namespace trirace

#endif  // TRIRACE_COMMON_LINK_COUNTERS_H_
