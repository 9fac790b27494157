// OpLinks: the links each op of schedule mode crosses, from the topology
// (topology/system_links.h) and what each comm's ranks told each other
// (peer_exchange.h). The one place where link ids meet the engine: every
// link the topology gives is registered with the engine in id order, so a
// LinkId here is the engine's.
//
//   auto links = OpLinks::FromParams();            // TRIRACE_TOPO_FILE or one NIC per host
//   links->Register(engine);                       // after creation and after each Publish
//   spec.links = links->For(op.state, op.func, op.peer_or_root);
//
// Per op, once the comm's peers are known (CommState::peers):
//   Send to r        the path from this rank to r (P2P)
//   Recv from r      the path from r to this rank
//   any collective   the ring over the comm's ranks in rank order (NCCL may
//                    order its rings otherwise; paths.h explains the
//                    approximation; AlltoAll and rooted collectives are
//                    charged the same ring)
// Before that (the exchange is in flight, failed, or the comm is not
// exchanged): both directions of this rank's NIC, which is what every op
// was charged before the topology existed.
//
// The model: TRIRACE_TOPO_FILE when set (loaded by content; a file that
// does not load, or that lacks this host, gives one WARN and the host-NIC
// model), else the host-NIC model (one NIC per host: TRIRACE_NIC, its rate
// from TRIRACE_NIC_GBPS or sysfs). Hosts the model lacks are added as copies
// of this one when a comm's ranks name them.
//
// Thread safety: every method is safe from several threads; CommPeers are
// immutable once published and live as long as the OpLinks.
#ifndef TRIRACE_INTERPOSE_NETWORK_OP_LINKS_H_
#define TRIRACE_INTERPOSE_NETWORK_OP_LINKS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/nccl_func.h"
#include "scheduler/engine.h"
#include "topology/local_nic.h"
#include "topology/peer_identity.h"
#include "topology/system_links.h"

namespace trirace::interpose {

struct CommState;

// What one comm's ranks told each other, resolved to links.
struct CommPeers {
  std::vector<topo::PeerIdentity> ranks;           // by comm rank
  std::vector<sched::LinkId> ring;                 // a collective's links
  std::vector<std::vector<sched::LinkId>> to;      // Send to rank r
  std::vector<std::vector<sched::LinkId>> from;    // Recv from rank r
  int hosts = 0;                                   // distinct hosts among the ranks
};

class OpLinks {
 public:
  static std::unique_ptr<OpLinks> FromParams();
  OpLinks(topo::System system, topo::LocalNic nic);

  // Registers with `engine` the links it does not have yet, in id order.
  void Register(sched::Engine& engine);
  // The occupancy map: the counters of this host's interface (TRIRACE_NIC)
  // measure both links of the NIC this process sends through.
  std::vector<std::pair<std::string, sched::LinkId>> OccupancyDevices() const;
  // The GPUs of this host that the model gives NVLinks, by bus id, and the
  // map from their NVLink monitor devices (monitors/nvlink_counters.h) to
  // each GPU's nvl-tx and nvl-rx links.
  std::vector<std::string> NvlinkGpus() const;
  std::vector<std::pair<std::string, sched::LinkId>> NvlinkOccupancyDevices() const;

  // This rank's identity on a comm whose device has bus id `gpu_pci` ("" if
  // none or unknown).
  topo::PeerIdentity LocalIdentity(const std::string& gpu_pci) const;

  // Resolves `ranks` (one identity per comm rank; `rank` is this one's) and
  // publishes the result in state.peers; registers new links with `engine`
  // first. A second publication for one comm is ignored.
  const CommPeers* Publish(CommState& state, int rank, std::vector<topo::PeerIdentity> ranks,
                           sched::Engine& engine);

  // The links of an op (see the header comment).
  std::vector<sched::LinkId> For(const CommState* state, NcclFunc func, int peer) const;
  // Before peers are known.
  const std::vector<sched::LinkId>& local() const { return local_; }

  const topo::LocalNic& nic() const { return nic_; }
  const topo::SystemLinks& system_links() const { return links_; }

 private:
  const topo::LocalNic nic_;
  topo::SystemLinks links_;
  std::vector<sched::LinkId> local_;
  absl::Mutex mu_;
  size_t registered_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<CommPeers>> published_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_NETWORK_OP_LINKS_H_
