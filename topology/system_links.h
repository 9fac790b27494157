// SystemLinks: the links of a System that grows as peers become known, with
// ids that never change once given — the one owner of link ids. The
// scheduler's engine registers the links in id order (so its LinkId equals
// the id here) and each op carries the ids of the links it crosses.
//
//   SystemLinks links(std::move(system), "node0");
//   std::vector<Endpoint> ranks = links.Place(identities);   // a comm's ranks
//   std::vector<int> ring = links.Ring(ranks);               // a collective
//   std::vector<int> send = links.P2P(ranks[me], ranks[peer]);
//   for (const Link& l : links.LinksFrom(registered)) engine.AddLink(...);
//
// Placing a rank: its host by key (PeerIdentity::host, compared in wire
// form); a host the System does not hold is added as a copy of the local
// host's hardware (clusters are built of identical nodes; the same
// assumption the host-NIC model made), under the peer's key. Its GPU by bus
// id; its NIC by name — on a host added here a NIC the copy lacks is added
// with the identity's rate (a peer's NIC is known from its own record); on a
// host from a file it is left to the GPU's NIC (AssignNics).
//
// HostNicSystem() is the model without a topology: one host with one NIC,
// no GPU; every peer host is then a copy with its own NIC. An op between
// hosts crosses the sender's nic-tx and the receiver's nic-rx (links are
// full duplex); ranks of one host meet in host memory (shm).
//
// Thread safety: every method is safe from several threads (one internal
// lock); links are append-only.
#ifndef TRIRACE_TOPOLOGY_SYSTEM_LINKS_H_
#define TRIRACE_TOPOLOGY_SYSTEM_LINKS_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "topology/model.h"
#include "topology/paths.h"
#include "topology/peer_identity.h"

namespace trirace::topo {

// One host keyed `host` with one NIC `nic` (rail 0) of `gbps`.
System HostNicSystem(const std::string& host, const std::string& nic, double gbps);

class SystemLinks {
 public:
  // `system` must hold the host `local_host`; it is added (with no hardware)
  // when it does not. Runs AssignNics on hosts without rails.
  SystemLinks(System system, std::string local_host);

  const std::string& local_host() const { return local_host_; }

  // This process's identity: the local host, the GPU with bus id `gpu_pci`
  // (may be "" or unknown to the model) and the NIC it sends through: the
  // GPU's, else `nic` when the host has it, else rail 0's.
  PeerIdentity LocalIdentity(const std::string& gpu_pci, const std::string& nic) const;

  // One endpoint per identity (see the header comment); may add hosts,
  // NICs and links.
  std::vector<Endpoint> Place(std::span<const PeerIdentity> ranks);

  // Link ids of the path `from` -> `to`, and of a ring over `ranks` in order.
  std::vector<int> P2P(const Endpoint& from, const Endpoint& to) const;
  std::vector<int> Ring(std::span<const Endpoint> ranks) const;
  // The local NIC `name` both ways (nic-tx, nic-rx), for ops whose peers are
  // not known yet and for the occupancy of that interface; empty when the
  // local host has no such NIC.
  std::vector<int> LocalNicLinks(const std::string& name) const;

  size_t size() const;
  // Links with id >= first, in id order.
  std::vector<Link> LinksFrom(size_t first) const;
  // The id of the link named `name`, or -1.
  int Find(absl::string_view name) const;
  // A copy of the System as placed so far.
  System system() const;

 private:
  // Rebuilds the resolver over system_ and gives new links ids.
  void Resolve() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<int> ToIds(const std::vector<int>& resolver_links) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  int HostOf(const PeerIdentity& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string local_host_;
  mutable absl::Mutex mu_;
  std::unique_ptr<System> system_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<PathResolver> resolver_ ABSL_GUARDED_BY(mu_);
  std::vector<int> to_id_ ABSL_GUARDED_BY(mu_);  // resolver index -> id
  std::vector<Link> links_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> ids_ ABSL_GUARDED_BY(mu_);
  int local_ ABSL_GUARDED_BY(mu_) = 0;  // index of the local host
};

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_SYSTEM_LINKS_H_
