// Ethernet occupancy: /sys/class/net/<if>/statistics/tx_bytes and rx_bytes.
//
// These count every byte through the interface (other jobs, other
// processes, non-NCCL traffic), so they show foreign load; they cannot tell
// this process's share (DeviceCounters::has_ours is false). RDMA traffic
// (RoCE) bypasses them: ib_counters.h reads the port counters instead.
//
// The counter files stay open; each Read() is two pread(2) calls per
// interface (a few microseconds).
//
// Thread safety: one thread at a time.
#ifndef TRIRACE_TOPOLOGY_MONITORS_NET_STATS_H_
#define TRIRACE_TOPOLOGY_MONITORS_NET_STATS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/link_counters.h"

namespace trirace::topo {

// Opens the counters of `interfaces` under `root` (/sys/class/net). Fails
// naming the interface and file when one cannot be opened, or when
// `interfaces` is empty. `clock` stamps the snapshots (must outlive the
// reader).
absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenNetStatsReader(
    const std::vector<std::string>& interfaces, const std::string& root = "/sys/class/net",
    const Clock* clock = &RealClock::Get());

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_MONITORS_NET_STATS_H_
