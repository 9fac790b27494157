// A simulated cluster: the hardware (a topo::System: hosts, GPUs, NICs,
// NVLink, PCIe, the fabric) plus what the simulator needs beyond it: where
// each rank runs, message latencies, the transport's matching rule and the
// test bed's shaping.
//
//   absl::StatusOr<Cluster> c = MakeCluster("dgx-h100", {.hosts = 32});
//   absl::StatusOr<Cluster> bed = MakeCluster("bed.json", {});   // a spec file
//
// Built-ins (BuiltinClusterNames()):
//   dgx-h100   8 H100 per node on NVSwitch (18 NVLinks of 200 Gbit/s per
//              GPU), 8 x 400 Gbit/s InfiniBand NICs (one per GPU, on its
//              PCIe switch), a rail-optimised fabric; 4 nodes by default.
//   pcie-2nic  8 GPUs per node on two PCIe Gen4 switches (4 GPUs and one
//              NIC each), no NVLink, 2 x 100 Gbit/s; one switch between
//              nodes; 4 nodes by default.
//   testbed    the namespace test bed as bench/e2e runs it: 4 hosts of 2
//              ranks (processes without GPUs), one uplink each at 300
//              Mbit/s shaped by a token bucket (burst 1 ms of the rate, at
//              least 32768 bytes, at a 10 Gbit/s line), sockets (eager
//              sends), ranks on one host over shared memory; 97.7% of the
//              shaped rate carries payload and emulated compute takes
//              4.2% longer than asked (both measured on the bed).
// A file is a TriRace JSON topology spec (topology/discovery/json_spec.h;
// `trirace topo --json`, `testbed.sh spec`): ranks per host = GPUs per host
// (1 on hosts without GPUs); Ethernet NICs mean sockets, InfiniBand RDMA.
//
// Each cluster states which of its queues honour traffic classes (Qos):
// dgx-h100 and pcie-2nic none (one lossless RDMA class, as most training
// fabrics carry), testbed fabric (testbed.sh --prio, run_e2e.sh's
// default: a priority band per uplink and a DSCP map in the bridge), a spec
// file none.
//
// Options override a cluster's defaults: hosts (a file's hosts are copied
// round-robin, as `like` would), each NIC's rate, ranks per host, the
// fabric (rail-optimised or two-tier with a given oversubscription).
//
// Rank r runs on host r / ranks_per_host, on that host's GPU
// r % ranks_per_host (launchers place ranks this way).
//
// Thread safety: a Cluster is a value; share it read-only.
#ifndef TRIRACE_SIM_CLUSTER_CLUSTER_H_
#define TRIRACE_SIM_CLUSTER_CLUSTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/model.h"
#include "topology/paths.h"

namespace trirace::sim {

// How a send meets its receive.
enum class Transport {
  kSocket,  // eager: a send's bytes flow as soon as it is posted (TCP)
  kRdma,    // receiver-ready: they flow once the receive is posted too
};

// Which queues honour the class marks the net plugin sets (socket
// priority, DSCP, an IB service level): where a mode that marks classes
// gets its strict priority.
enum class Qos {
  kNone,    // no class queue anywhere (fq_codel hosts, one fabric class)
  kHost,    // the hosts' egress queues only (a prio qdisc; no switch QoS)
  kFabric,  // every link: host egress and the switches' ports
};
std::string_view QosName(Qos q);
std::optional<Qos> QosFromName(std::string_view name);
// Whether the link named `link` (ClusterLinks' names) honours the marks
// under `qos`: the hosts' egress queues are the NICs' send sides.
bool QosHonours(Qos qos, std::string_view link);

struct ClusterOptions {
  int hosts = 0;             // 0: the cluster's own count
  double gbps = 0;           // every NIC's rate; 0: as the cluster has it
  int ranks_per_host = 0;    // 0: GPUs per host (1 without GPUs; testbed 2)
  std::optional<topo::Fabric::Kind> fabric;  // nullopt: the cluster's
  double oversubscription = 0;  // two-tier leaf down/up; 0: the cluster's (or 1)
  int hosts_per_leaf = 0;       // two-tier; 0: the cluster's (or 16)
  std::optional<Transport> transport;
  int nics = 0;  // NICs per host of a built-in test bed (0: 1); rails are NICs 0, 1, ...
  std::optional<Qos> qos;  // nullopt: the cluster's
};

struct Cluster {
  std::string name;    // built-in name or the file's path
  topo::System system;
  int ranks_per_host = 1;
  Transport transport = Transport::kRdma;
  Qos qos = Qos::kNone;
  int64_t net_latency_ns = 5'000;    // per message (ring step) between hosts
  int64_t local_latency_ns = 1'000;  // per message inside a host
  // Token bucket on every NIC link (0: none), as testbed.sh shapes.
  double burst_bytes = 0;
  double line_gbps = 0;
  // Measured properties of the test bed (docs/simulation.md,
  // "Calibration"), 1 elsewhere: the share of a NIC's shaped rate that
  // carries payload (headers, framing, TCP's acknowledgements), and how
  // much longer emulated compute takes than asked (sleeps on a loaded
  // 2-core machine).
  double nic_efficiency = 1;
  double compute_scale = 1;
  // Which NIC each rank of a host without GPUs sends through (empty: NIC
  // 0), as TRIRACE_NIC / NCCL_SOCKET_IFNAME pick it per rank; several jobs
  // on one test bed use it (sim/workloads/jobs.h).
  std::vector<int> nic_of_rank;

  int hosts() const { return int(system.hosts.size()); }
  int ranks() const { return hosts() * ranks_per_host; }
  int HostOf(int rank) const { return rank / ranks_per_host; }
  // Where rank r sends from: its GPU, or (no GPUs) its host's first NIC.
  topo::Endpoint EndpointOf(int rank) const;
  // The NIC (index in its host's nics) rank r uses; -1 when none.
  int NicOf(int rank) const;
  // The NIC rate of rank r, bytes/s (0 unknown).
  double NicBytesPerS(int rank) const;
};

std::vector<std::string> BuiltinClusterNames();

// The built-in cluster `name_or_file`, or the spec file of that path.
// Errors name what is wrong: "--cluster 'x': expected one of dgx-h100,
// pcie-2nic, testbed or a JSON spec file", the file and line of a spec that
// does not parse, a bad option value.
absl::StatusOr<Cluster> MakeCluster(const std::string& name_or_file, const ClusterOptions& options);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_CLUSTER_CLUSTER_H_
