// Link occupancy input: the reader interface and rate computation.
//
// A reader returns cumulative byte counters per network device; a
// RateMeter turns two successive snapshots into bytes/s. The engine maps
// devices to links and derives the foreign traffic the trirace policy keeps
// headroom against (policy.h LinkState).
//
// Backends:
//   - SysfsOccupancyReader (sysfs_occupancy.h): /sys/class/net/<if>/
//     statistics/{tx,rx}_bytes. Sees every byte through the interface,
//     whoever sent it, but cannot tell this process's share.
//   - PluginOccupancyReader (interpose/plugin_occupancy.h): the net
//     plugin's per-host shared-memory segment (include/trirace/occupancy.h).
//     Sees the job's NCCL traffic on each NIC and this process's own share,
//     so foreign = all - ours. It lives outside scheduler/ so that this
//     module does not link the plugin's reader library.
// interpose/engine_factory.h MakeOccupancyReader() picks one by
// TRIRACE_OCCUPANCY.
//
// Thread safety: a reader is used by one thread at a time (the engine
// thread); RateMeter likewise.
#ifndef TRIRACE_SCHEDULER_OCCUPANCY_READER_H_
#define TRIRACE_SCHEDULER_OCCUPANCY_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/counter_rates.h"

namespace trirace::sched {

// Cumulative counters of one device.
struct DeviceCounters {
  std::string device{};  // interface name, e.g. "eth0"
  uint64_t tx_bytes = 0;
  uint64_t rx_bytes = 0;
  // The source also knows this process's own traffic on the device.
  bool has_ours = false;
  uint64_t ours_tx_bytes = 0;
  uint64_t ours_rx_bytes = 0;
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

// A device's traffic over the last interval: the busier direction (links
// are full duplex; the busier one is what a new transfer competes with).
struct DeviceRate {
  std::string device;
  double bytes_per_s = 0;
  double ours_bytes_per_s = -1;  // -1: the source does not know
};

class RateMeter {
 public:
  // Rates between the previous snapshot and `snap` for devices present in
  // both; empty on the first call. A counter that went backwards (device
  // reset, process slot recycled) restarts that device.
  std::vector<DeviceRate> Update(const OccupancySnapshot& snap);

 private:
  CounterRates rates_;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_OCCUPANCY_READER_H_
