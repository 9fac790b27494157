// InfiniBand / RoCE occupancy: the port counters of RDMA devices,
// /sys/class/infiniband/<dev>/ports/<port>/counters/port_xmit_data and
// port_rcv_data. They count in units of 4 bytes (octets / 4, per the
// InfiniBand specification's PortXmitData), so each value is multiplied by
// 4. They see RDMA traffic that the netdev statistics miss (RoCE bypasses
// the kernel's stack), from every process on the port; has_ours is false.
// A counter that stops at its maximum (older adapters' 32-bit counters) or
// is reset reads as going backwards or standing still; the rate meter
// restarts the series on a decrease.
//
// The device name in each snapshot is the port's `name` when set (the
// netdev a caller measures, so the counters map to that NIC's links), else
// "<dev>" for port 1 and "<dev>:<port>" for the others.
//
// Thread safety: one thread at a time.
#ifndef TRIRACE_TOPOLOGY_MONITORS_IB_COUNTERS_H_
#define TRIRACE_TOPOLOGY_MONITORS_IB_COUNTERS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/link_counters.h"

namespace trirace::topo {

struct IbPort {
  std::string device{};  // "mlx5_0"
  int port = 1;
  std::string name{};    // the name snapshots give it; "" for IbPortName's
};

// The default name of `port` in snapshots (see the header comment).
std::string IbPortName(const IbPort& port);

// Opens the counters of `ports` under `root` (/sys/class/infiniband).
// Fails naming the device, port and file when one cannot be opened, or
// when `ports` is empty.
absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenIbCountersReader(
    const std::vector<IbPort>& ports, const std::string& root = "/sys/class/infiniband",
    const Clock* clock = &RealClock::Get());

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_MONITORS_IB_COUNTERS_H_
