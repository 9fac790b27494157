// The simulated cluster's flags, shared by `trirace sim` and `trirace
// advise`: --cluster and what changes it (--hosts, --gbps, --ranks-per-host,
// --fabric, --oversubscription, --hosts-per-leaf, --nics, --transport,
// --qos, --latency-us, --compute-scale).
//
//   ClusterFlags f;  AddClusterFlags(app, &f);   // when the command is built
//   absl::Status s = ResolveClusterFlags(&f);   // once parsed: checks, fills cluster_options
//   absl::StatusOr<sim::Cluster> c = MakeFlaggedCluster(f, f.cluster_options);
//
// Errors name the flag, its value and what is accepted.
//
// Thread safety: plain data and pure functions.
#ifndef TRIRACE_TOOLS_TRIRACE_CLUSTER_FLAGS_H_
#define TRIRACE_TOOLS_TRIRACE_CLUSTER_FLAGS_H_

#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/cluster/cluster.h"

namespace trirace::tools {

// The simulator's size limits: a rate past this is no NIC (and overflows
// the flows' times), and past this many ranks a run needs more memory and
// time than it is worth (8192 GPUs: 1.5 GiB and about a minute; memory
// grows linearly, docs/simulation.md "Scale of the simulator").
inline constexpr double kMaxGbps = 1e5;
inline constexpr int kMaxRanks = 16384;

struct ClusterFlags {
  std::string cluster;
  sim::ClusterOptions cluster_options;
  std::string fabric, transport, qos;
  std::optional<double> latency_us;
  double compute_scale = 1;
  std::optional<int> hosts;  // unset: the cluster's (or as the workload fills)
  std::optional<double> gbps;
};

void AddClusterFlags(CLI::App* app, ClusterFlags* f);

// Checks --hosts, --gbps, --fabric, --transport, --qos, --latency-us and
// --compute-scale, and puts them into f->cluster_options.
absl::Status ResolveClusterFlags(ClusterFlags* f);

// The cluster for `options` (f's own, or a what-if's), with --latency-us and
// --compute-scale applied; refused past kMaxRanks.
absl::StatusOr<sim::Cluster> MakeFlaggedCluster(const ClusterFlags& f, const sim::ClusterOptions& options);

// The cluster a replay of `ranks` ranks runs on: without --hosts
// (`hosts_given` false) as many hosts as the ranks fill; a trace's compute
// is measured, so the cluster's calibration of emulated compute (the bed's
// 1.042) is not applied, --compute-scale is. Refused when the ranks do not
// fit.
absl::StatusOr<sim::Cluster> MakeReplayCluster(const ClusterFlags& f, sim::ClusterOptions options, int ranks,
                                               bool hosts_given);

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_CLUSTER_FLAGS_H_
