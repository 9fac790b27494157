// The link model: which shared links an operation crosses.
//
// The scheduler reasons about links (opaque ids with a capacity); the model
// that maps an operation to links sits behind LinkModel so the topology
// work can replace this first model without touching the policies.
//
// NicLinkModel, the model for now: one link per host NIC. Ranks on one host
// share their host's NIC; an op between hosts crosses the NICs of both (for
// a collective: the NIC of every host its ranks are on); an op among ranks
// of one host crosses no modelled link. Hosts are told apart by a host key:
// TRIRACE_HOST_ID when set (test beds that fake several hosts on one
// machine), else the host name. The local NIC's capacity comes from
// TRIRACE_NIC_GBPS, else from /sys/class/net/<if>/speed, else 100 Gbit/s;
// remote NICs are assumed to match the local one.
//
// Usage (launcher):
//   NicLinkModel model(NicLinkModel::Options::FromParams());
//   for (const LinkSpec& l : model.links()) engine.AddLink(l);   // once
//   spec.links = model.LinksFor({.peer_hosts = comm_hosts});     // per op
//   // new hosts seen later add links: re-sync with engine.AddLink when
//   // model.links().size() grew.
//
// Thread safety: LinksFor() and links() are safe from several threads
// (internally locked); link ids never change once assigned.
#ifndef TRIRACE_SCHEDULER_LINK_MODEL_H_
#define TRIRACE_SCHEDULER_LINK_MODEL_H_

#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/task.h"

namespace trirace::sched {

// A link as registered with the engine.
struct LinkSpec {
  std::string name{};               // e.g. "nic:hostA"
  double capacity_bytes_per_s = 0;  // 0 = unknown
  // The local interface whose counters measure this link ("" if remote).
  std::string interface{};
};

// The hosts an op involves, as host keys (see NicLinkModel).
struct OpEndpoints {
  // Host keys of the other ranks the op exchanges data with (the peer of a
  // send/recv; every rank of the comm for a collective). Empty = unknown:
  // the op is assumed to leave this host through its NIC.
  std::span<const std::string> peer_hosts{};
};

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  // Every link known so far, indexed by LinkId.
  virtual std::vector<LinkSpec> links() const = 0;
  // The links an op from this rank crosses (no duplicates).
  virtual std::vector<LinkId> LinksFor(const OpEndpoints& op) = 0;
};

class NicLinkModel final : public LinkModel {
 public:
  struct Options {
    std::string local_host;           // host key of this process
    std::string local_interface;      // NIC whose counters measure the local link
    double nic_bytes_per_s = 12.5e9;  // capacity of every NIC link
    // TRIRACE_HOST_ID / host name, TRIRACE_NIC / default-route interface,
    // TRIRACE_NIC_GBPS / sysfs speed; `sysfs_net` is /sys/class/net.
    static Options FromParams(const std::string& sysfs_net = "/sys/class/net");
  };

  explicit NicLinkModel(Options options);
  std::vector<LinkSpec> links() const override;
  std::vector<LinkId> LinksFor(const OpEndpoints& op) override;

  const Options& options() const { return options_; }
  // The link of the local NIC (always id 0).
  static constexpr LinkId kLocalNic = 0;

 private:
  LinkId LinkOfHost(const std::string& host) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::vector<LinkSpec> links_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, LinkId> by_host_ ABSL_GUARDED_BY(mu_);
};

// The interface of the default IPv4 route in `proc_net_route` (the format
// of /proc/net/route), or "" when there is none.
std::string DefaultRouteInterface(const std::string& proc_net_route = "/proc/net/route");

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_LINK_MODEL_H_
