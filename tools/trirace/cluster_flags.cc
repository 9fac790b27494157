#include "cluster_flags.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace trirace::tools {

void AddClusterFlags(CLI::App* app, ClusterFlags* f) {
  app->add_option("--cluster", f->cluster, "dgx-h100, pcie-2nic, testbed, or a JSON topology spec file")
      ->type_name("NAME|FILE")
      ->required();
  app->add_option("--hosts", f->hosts, "nodes (default: as many as the workload's ranks fill, else the cluster's)")
      ->type_name("N");
  app->add_option("--gbps", f->gbps, "every NIC's rate, Gbit/s (default: the cluster's)")->type_name("G");
  app->add_option("--ranks-per-host", f->cluster_options.ranks_per_host, "ranks per node (default: GPUs per node)")
      ->type_name("R");
  app->add_option("--fabric", f->fabric, "single, rail (rail-optimised) or two-tier (default: the cluster's)")
      ->type_name("KIND");
  app->add_option("--oversubscription", f->cluster_options.oversubscription, "two-tier: leaf down:up ratio")
      ->type_name("X");
  app->add_option("--hosts-per-leaf", f->cluster_options.hosts_per_leaf, "two-tier: nodes per leaf switch (16)")
      ->type_name("N");
  app->add_option("--nics", f->cluster_options.nics, "testbed: NICs (rails) per host (default 1; the rails-* presets 2)")
      ->type_name("N");
  app->add_option("--transport", f->transport, "socket (eager sends) or rdma (receiver-ready)")->type_name("KIND");
  app->add_option("--qos", f->qos,
                  "which queues honour the class marks: none, host (the hosts' egress only) or fabric (every "
                  "link); default: the cluster's (dgx-h100, pcie-2nic, a spec file: none; testbed: fabric, as "
                  "testbed.sh --prio)")
      ->type_name("none|host|fabric");
  app->add_option("--latency-us", f->latency_us, "a message's latency between hosts, us (default: the cluster's)")
      ->type_name("US");
  app->add_option("--compute-scale", f->compute_scale,
                  "multiply every compute time by X (any workload; the compute : communication sweep)")
      ->type_name("X");
}

absl::Status ResolveClusterFlags(ClusterFlags* f) {
  const auto bad = [](const std::string& why) { return absl::InvalidArgumentError(why); };
  if (f->hosts) {
    if (*f->hosts < 1 || *f->hosts > kMaxRanks) {
      return bad(absl::StrCat("--hosts ", *f->hosts, ": expected a count >= 1 and at most ", kMaxRanks));
    }
    f->cluster_options.hosts = *f->hosts;
  }
  if (f->gbps) {
    if (!(*f->gbps > 0 && *f->gbps <= kMaxGbps)) {
      return bad(absl::StrCat("--gbps ", *f->gbps, ": expected a rate > 0 and at most ", kMaxGbps, " Gbit/s"));
    }
    f->cluster_options.gbps = *f->gbps;
  }
  if (!f->fabric.empty()) {
    if (f->fabric == "single") f->cluster_options.fabric = topo::Fabric::Kind::kSingleSwitch;
    else if (f->fabric == "rail") f->cluster_options.fabric = topo::Fabric::Kind::kRailOptimized;
    else if (f->fabric == "two-tier") f->cluster_options.fabric = topo::Fabric::Kind::kTwoTier;
    else return bad("--fabric '" + f->fabric + "': expected single, rail or two-tier");
  }
  if (!f->transport.empty()) {
    if (f->transport == "socket") f->cluster_options.transport = sim::Transport::kSocket;
    else if (f->transport == "rdma") f->cluster_options.transport = sim::Transport::kRdma;
    else return bad("--transport '" + f->transport + "': expected socket or rdma");
  }
  if (!f->qos.empty()) {
    f->cluster_options.qos = sim::QosFromName(f->qos);
    if (!f->cluster_options.qos) return bad("--qos '" + f->qos + "': expected none, host or fabric");
  }
  if (f->latency_us && !(*f->latency_us >= 0)) return bad(absl::StrCat("--latency-us ", *f->latency_us, ": expected >= 0"));
  if (!(f->compute_scale > 0)) return bad(absl::StrCat("--compute-scale ", f->compute_scale, ": expected a factor > 0"));
  return absl::OkStatus();
}

absl::StatusOr<sim::Cluster> MakeFlaggedCluster(const ClusterFlags& f, const sim::ClusterOptions& options) {
  absl::StatusOr<sim::Cluster> cluster = sim::MakeCluster(f.cluster, options);
  if (!cluster.ok()) return cluster;
  if (cluster->ranks() > kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat("cluster ", cluster->name, " has ", cluster->ranks(), " ranks (",
                                                   cluster->hosts(), " hosts x ", cluster->ranks_per_host,
                                                   "); the simulator takes at most ", kMaxRanks));
  }
  if (f.latency_us) cluster->net_latency_ns = int64_t(*f.latency_us * 1000);
  cluster->compute_scale *= f.compute_scale;
  return cluster;
}

absl::StatusOr<sim::Cluster> MakeReplayCluster(const ClusterFlags& f, sim::ClusterOptions options, int ranks,
                                               bool hosts_given) {
  absl::StatusOr<sim::Cluster> cluster = MakeFlaggedCluster(f, options);
  if (cluster.ok() && !hosts_given && ranks > cluster->ranks()) {
    options.hosts = (ranks + cluster->ranks_per_host - 1) / std::max(cluster->ranks_per_host, 1);
    cluster = MakeFlaggedCluster(f, options);
  }
  if (!cluster.ok()) return cluster;
  if (ranks > cluster->ranks()) {
    return absl::InvalidArgumentError(absl::StrCat("the traces have ", ranks, " ranks but cluster ", cluster->name,
                                                   " has ", cluster->ranks(), "; set --hosts / --ranks-per-host"));
  }
  cluster->compute_scale = f.compute_scale;
  return cluster;
}

}  // namespace trirace::tools
