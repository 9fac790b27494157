// Link occupancy input: rates from the counters of an OccupancyReader
// (common/link_counters.h, the interface every monitor implements).
//
// A reader returns cumulative byte counters per network device; a
// RateMeter turns two successive snapshots into bytes/s. The engine maps
// devices to links and derives the foreign traffic the trirace policy keeps
// headroom against (policy.h LinkState). The readers live with what they
// measure (topology/monitors/, interpose/network/plugin_occupancy.h), so this
// module links no reader; interpose/gate/engine_factory.h MakeOccupancyReader()
// picks one by TRIRACE_OCCUPANCY.
//
// Thread safety: RateMeter is used by one thread at a time (the engine
// thread).
#ifndef TRIRACE_SCHEDULER_OCCUPANCY_READER_H_
#define TRIRACE_SCHEDULER_OCCUPANCY_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/counter_rates.h"
#include "common/link_counters.h"

namespace trirace::sched {

// A device's traffic over the last interval: the busier direction (links
// are full duplex; the busier one is what a new transfer competes with).
struct DeviceRate {
  std::string device;
  double bytes_per_s = 0;
  double ours_bytes_per_s = -1;  // -1: the source does not know
  // DeviceCounters::others_urgent_send_bytes at the interval's end.
  int64_t others_urgent_bytes = -1;
};

class RateMeter {
 public:
  // Rates between the previous snapshot and `snap` for devices present in
  // both; empty on the first call. A counter that went backwards (device
  // reset, process slot recycled) or a new DeviceCounters::series restarts
  // that device.
  std::vector<DeviceRate> Update(const OccupancySnapshot& snap);

 private:
  CounterRates rates_;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_OCCUPANCY_READER_H_
