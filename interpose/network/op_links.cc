#include "interpose/network/op_links.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/params.h"
#include "interpose/comm/comm_state.h"
#include "topology/discovery/spec_file.h"
#include "topology/monitors/nvlink_counters.h"

namespace trirace::interpose {
namespace {

std::vector<sched::LinkId> ToLinkIds(const std::vector<int>& ids) { return {ids.begin(), ids.end()}; }

}  // namespace

std::unique_ptr<OpLinks> OpLinks::FromParams() {
  topo::LocalNic nic = topo::LocalNicFromParams();
  const std::string file = ParamString(ParamId::kTopoFile);
  if (!file.empty()) {
    absl::StatusOr<topo::System> sys = topo::LoadTopologySpec(file);
    if (!sys.ok()) {
      TRIRACE_WARN(TOPO, "TRIRACE_TOPO_FILE=%s: %s; using one NIC per host (%s, %g Gbit/s)", file,
                   sys.status().message(), nic.interface, nic.gbps);
    } else if (sys->FindHost(nic.host_key) < 0) {
      TRIRACE_WARN(TOPO, "TRIRACE_TOPO_FILE=%s has no host \"%s\" (this host's key: TRIRACE_HOST_ID or the host "
                   "name); using one NIC per host (%s, %g Gbit/s)", file, nic.host_key, nic.interface, nic.gbps);
    } else {
      TRIRACE_INFO(TOPO, "topology from %s: %d host(s); this host is \"%s\"", file, sys->hosts.size(),
                   nic.host_key);
      const topo::Host& me = sys->hosts[sys->FindHost(nic.host_key)];
      if (!ParamString(ParamId::kNic).empty() && me.FindNic(nic.interface) < 0) {
        TRIRACE_WARN(TOPO, "TRIRACE_NIC=%s is not a NIC of host \"%s\" in TRIRACE_TOPO_FILE=%s; its counters are "
                     "taken for the NIC this process's GPU (or rail 0) uses there", nic.interface, nic.host_key, file);
      }
      return std::make_unique<OpLinks>(*std::move(sys), std::move(nic));
    }
  }
  topo::System sys = topo::HostNicSystem(nic.host_key, nic.interface, nic.gbps);
  return std::make_unique<OpLinks>(std::move(sys), std::move(nic));
}

OpLinks::OpLinks(topo::System system, topo::LocalNic nic)
    : nic_(std::move(nic)), links_(std::move(system), nic_.host_key) {
  const topo::PeerIdentity me = links_.LocalIdentity("", nic_.interface);
  local_ = ToLinkIds(links_.LocalNicLinks(me.nic));
}

void OpLinks::Register(sched::Engine& engine) {
  absl::MutexLock lock(&mu_);
  for (const topo::Link& l : links_.LinksFrom(registered_)) {
    const sched::LinkId id = engine.AddLink({.name = l.name, .capacity_bytes_per_s = l.gbps * 1e9 / 8});
    if (id != registered_) {
      TRIRACE_WARN_ONCE(TOPO, "link %s got engine id %d, expected %d: link accounting may be off", l.name, id,
                        registered_);
    }
    ++registered_;
  }
}

std::vector<std::pair<std::string, sched::LinkId>> OpLinks::OccupancyDevices() const {
  std::vector<std::pair<std::string, sched::LinkId>> out;
  for (sched::LinkId id : local_) out.emplace_back(nic_.interface, id);
  return out;
}

std::vector<std::string> OpLinks::NvlinkGpus() const {
  std::vector<std::string> out;
  const topo::System system = links_.system();
  const int h = system.FindHost(links_.local_host());
  if (h < 0) return out;
  for (const topo::Gpu& g : system.hosts[h].gpus) {
    if (!g.nvlinks.empty() && links_.Find(absl::StrCat("nvl-tx:", links_.local_host(), "/", g.pci)) >= 0) {
      out.push_back(g.pci);
    }
  }
  return out;
}

std::vector<std::pair<std::string, sched::LinkId>> OpLinks::NvlinkOccupancyDevices() const {
  std::vector<std::pair<std::string, sched::LinkId>> out;
  for (const std::string& pci : NvlinkGpus()) {
    for (const char* side : {"nvl-tx:", "nvl-rx:"}) {
      const int id = links_.Find(absl::StrCat(side, links_.local_host(), "/", pci));
      if (id >= 0) out.emplace_back(topo::NvlinkDeviceName(pci), static_cast<sched::LinkId>(id));
    }
  }
  return out;
}

topo::PeerIdentity OpLinks::LocalIdentity(const std::string& gpu_pci) const {
  return links_.LocalIdentity(gpu_pci, nic_.interface);
}

const CommPeers* OpLinks::Publish(CommState& state, int rank, std::vector<topo::PeerIdentity> ranks,
                                  sched::Engine& engine) {
  auto peers = std::make_unique<CommPeers>();
  const std::vector<topo::Endpoint> ep = links_.Place(ranks);
  peers->ring = ToLinkIds(links_.Ring(ep));
  peers->to.resize(ep.size());
  peers->from.resize(ep.size());
  std::set<int> hosts;
  for (size_t r = 0; r < ep.size(); ++r) {
    hosts.insert(ep[r].host);
    if (static_cast<int>(r) == rank) continue;
    peers->to[r] = ToLinkIds(links_.P2P(ep[rank], ep[r]));
    peers->from[r] = ToLinkIds(links_.P2P(ep[r], ep[rank]));
  }
  peers->hosts = static_cast<int>(hosts.size());
  peers->ranks = std::move(ranks);
  Register(engine);
  absl::MutexLock lock(&mu_);
  const CommPeers* expected = nullptr;
  if (!state.peers.compare_exchange_strong(expected, peers.get(), std::memory_order_acq_rel)) return expected;
  published_.push_back(std::move(peers));
  return published_.back().get();
}

std::vector<sched::LinkId> OpLinks::For(const CommState* state, NcclFunc func, int peer) const {
  const CommPeers* p = state != nullptr ? state->peers.load(std::memory_order_acquire) : nullptr;
  if (p == nullptr) return local_;
  if (IsPointToPoint(func)) {
    const auto& table = func == NcclFunc::kSend ? p->to : p->from;
    if (peer >= 0 && peer < static_cast<int>(table.size())) return table[peer];
    return local_;
  }
  return p->ring;
}

}  // namespace trirace::interpose
