// libibverbs discovery: the RDMA devices of this machine and the attributes
// of their ports, as the verbs API reports them (the same numbers NCCL's IB
// transport reads).
//
// libibverbs is optional at build time and at run time: it is loaded with
// dlopen (nothing links it), its types come from <infiniband/verbs.h> where
// the build found the header (TRIRACE_HAVE_IBVERBS). An absent header or
// library, a missing symbol, no device, or a device that does not open
// gives fewer ports (possibly none) and a line in `notes`, never an error or
// a crash.
//
//   per device (ibv_get_device_list, ibv_open_device, ibv_query_device)
//     per port 1..phys_port_cnt (ibv_query_port)
//       state          IBV_PORT_* (4: ACTIVE)
//       active_speed   an IB speed code (SDR 1, DDR 2, QDR 4, FDR10 8,
//                      FDR 16, EDR 32, HDR 64, NDR 128)
//       active_width   an IB width code (1X 1, 4X 2, 8X 4, 12X 8, 2X 16)
//       link_layer     InfiniBand | Ethernet (RoCE)
//   gbps = the lane rate of the speed x the lanes of the width (IbPortGbps).
//
// Thread safety: no shared state; DiscoverIbverbs may run on several
// threads (libibverbs is thread-safe). Each call loads and unloads the
// library and closes every device it opened.
#ifndef TRIRACE_TOPOLOGY_DISCOVERY_IBVERBS_H_
#define TRIRACE_TOPOLOGY_DISCOVERY_IBVERBS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/model.h"

namespace trirace::topo {

struct IbverbsPort {
  std::string device;  // "mlx5_0"
  int port = 1;
  int state = 0;  // IBV_PORT_* value: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER
  bool active = false;   // ACTIVE or ACTIVE_DEFER
  int active_speed = 0;  // raw codes, as reported
  int active_width = 0;
  double gbps = 0;  // IbPortGbps(active_speed, active_width); 0: unknown
  LinkLayer link_layer = LinkLayer::kUnknown;
};

struct IbverbsDiscovery {
  std::vector<IbverbsPort> ports;  // by device (the library's order), then port
  std::vector<std::string> notes;  // "ibverbs: ..." lines: what was absent or failed
};

// The ports of every RDMA device `library` (a name dlopen resolves, or a
// path) reports.
IbverbsDiscovery DiscoverIbverbs(absl::string_view library = "libibverbs.so.1");

// Gbit/s per direction of a port from its speed and width codes (above):
// 4X HDR 200, 4X NDR 400, 4X EDR 100, 4X FDR 56, 1X EDR 25; 0 when either
// code is unknown.
double IbPortGbps(int active_speed, int active_width);

// "DOWN", "ACTIVE", ...; "state <n>" for a value outside IBV_PORT_*.
std::string IbPortStateName(int state);

// Adds `ports` to `host` by the merge rule of local.h: a port of a NIC
// already listed (same device name and port) fills its rate where it is 0
// and its link layer where unknown ("nic rates" from kIbverbs where nothing
// gave rates yet); an ACTIVE port of a device `host` does not list at all
// becomes a NIC outside the PCIe tree ("nics" from kIbverbs where nothing
// gave NICs yet). Ports of a device listed with other ports are not added.
void AddIbverbsFacts(const std::vector<IbverbsPort>& ports, Host& host);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_DISCOVERY_IBVERBS_H_
