#include "topology/discovery/sysfs.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/net_interfaces.h"

namespace trirace::topo {
namespace {

namespace fs = std::filesystem;

constexpr int kArphrdEther = 1;
constexpr int kArphrdInfiniband = 32;

// The first line of `path`, trimmed; nullopt when it cannot be read.
std::optional<std::string> ReadLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(line));
}

std::optional<int64_t> ReadInt(const fs::path& path, int base = 10) {
  std::optional<std::string> text = ReadLine(path);
  if (!text) return std::nullopt;
  int64_t v = 0;
  if (base == 16) {
    absl::string_view t = *text;
    absl::ConsumePrefix(&t, "0x");
    if (!absl::SimpleHexAtoi(t, &v)) return std::nullopt;
  } else if (!absl::SimpleAtoi(*text, &v)) {
    return std::nullopt;
  }
  return v;
}

// Entries of a directory, sorted; none when it cannot be read.
std::vector<std::string> List(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The PCI functions on the resolved path of `device_link`, root first
// (normalised bus ids); empty for a virtual device.
std::vector<std::string> PciChain(const fs::path& device_link) {
  std::error_code ec;
  const fs::path real = fs::canonical(device_link, ec);
  std::vector<std::string> chain;
  if (ec) return chain;
  for (const fs::path& part : real) {
    const std::string id = NormalizeBusId(part.string());
    if (LooksLikeBusId(id)) chain.push_back(id);
  }
  return chain;
}

// "200 Gb/sec (4X HDR)" -> 200.
double IbRateGbps(const std::string& rate) {
  double v = 0;
  const std::vector<absl::string_view> words = absl::StrSplit(rate, ' ', absl::SkipEmpty());
  return !words.empty() && absl::SimpleAtod(words[0], &v) && v > 0 ? v : 0;
}

}  // namespace

std::vector<SysfsNic> ListSysfsNics(const std::string& root) {
  std::vector<SysfsNic> out;
  std::set<std::string> rdma_netdevs;
  const fs::path ib = fs::path(root) / "class/infiniband";
  for (const std::string& dev : List(ib)) {
    const std::vector<std::string> chain = PciChain(ib / dev / "device");
    const std::vector<std::string> netdevs = List(ib / dev / "device/net");
    for (const std::string& port : List(ib / dev / "ports")) {
      SysfsNic n;
      n.name = dev;
      n.rdma = true;
      if (!absl::SimpleAtoi(port, &n.port) || n.port < 1) continue;
      const fs::path p = ib / dev / "ports" / port;
      n.pci = chain.empty() ? "" : chain.back();
      n.is_virtual = chain.empty();
      if (std::optional<std::string> state = ReadLine(p / "state")) n.up = absl::StrContains(*state, "ACTIVE");
      if (std::optional<std::string> rate = ReadLine(p / "rate")) n.gbps = IbRateGbps(*rate);
      if (std::optional<std::string> layer = ReadLine(p / "link_layer")) {
        n.link_layer = *layer == "InfiniBand" ? LinkLayer::kInfiniBand
                       : *layer == "Ethernet" ? LinkLayer::kEthernet
                                              : LinkLayer::kUnknown;
      }
      if (!netdevs.empty()) n.netdev = netdevs.size() >= static_cast<size_t>(n.port) ? netdevs[n.port - 1] : netdevs[0];
      if (!n.netdev.empty()) rdma_netdevs.insert(n.netdev);
      out.push_back(std::move(n));
    }
  }
  const std::string net = (fs::path(root) / "class/net").string();
  for (const std::string& ifname : List(net)) {
    if (rdma_netdevs.count(ifname) > 0) continue;
    SysfsNic n;
    n.name = ifname;
    const std::vector<std::string> chain = PciChain(fs::path(net) / ifname / "device");
    n.pci = chain.empty() ? "" : chain.back();
    n.is_virtual = chain.empty();
    const std::optional<int64_t> type = ReadInt(fs::path(net) / ifname / "type");
    n.link_layer = type == kArphrdEther ? LinkLayer::kEthernet
                   : type == kArphrdInfiniband ? LinkLayer::kInfiniBand
                                               : LinkLayer::kUnknown;
    n.up = ReadLine(fs::path(net) / ifname / "operstate") == std::optional<std::string>("up");
    if (std::optional<int64_t> mbps = SysfsLinkSpeedMbps(ifname, net)) n.gbps = static_cast<double>(*mbps) / 1000.0;
    out.push_back(std::move(n));
  }
  for (SysfsNic& n : out) {
    if (n.pci.empty()) continue;
    const std::optional<int64_t> numa = ReadInt(fs::path(root) / "bus/pci/devices" / n.pci / "numa_node");
    n.numa = numa && *numa >= 0 ? static_cast<int>(*numa) : -1;
  }
  return out;
}

bool HasActiveRdmaPort(const std::string& root) {
  for (const SysfsNic& n : ListSysfsNics(root)) {
    if (n.rdma && n.up) return true;
  }
  return false;
}

namespace {

// The index of the PCI node of `chain`'s last function in `host`, adding it
// and the switches above it where missing. As NCCL counts them, a PCIe
// switch is its upstream port: the functions on the path alternate root
// port (dropped), switch upstream port (a node), downstream port (dropped),
// upstream port of a nested switch, ... so a GPU and a NIC under one switch
// share their parent node (PIX).
int PlaceChain(const std::string& root, const std::vector<std::string>& full, Host& host) {
  if (full.empty()) return -1;
  std::vector<std::string> chain;
  for (size_t i = 1; i + 1 < full.size(); i += 2) chain.push_back(full[i]);
  chain.push_back(full.back());
  int parent = -1;
  for (size_t i = 0; i < chain.size(); ++i) {
    int at = host.FindPci(chain[i]);
    if (at < 0) {
      const fs::path dev = fs::path(root) / "bus/pci/devices" / chain[i];
      PciNode node;
      node.busid = chain[i];
      node.parent = parent;
      node.is_switch = i + 1 < chain.size();
      const std::optional<int64_t> numa = ReadInt(dev / "numa_node");
      node.numa = numa && *numa >= 0 ? static_cast<int>(*numa) : (parent >= 0 ? host.pci[parent].numa : 0);
      const std::optional<std::string> speed = ReadLine(dev / "current_link_speed");
      const std::optional<std::string> width = ReadLine(dev / "current_link_width");
      if (speed && width) node.link_gbps = PcieGbps(*speed, *width);
      host.pci.push_back(std::move(node));
      at = static_cast<int>(host.pci.size()) - 1;
    }
    parent = at;
  }
  return parent;
}

bool IsNvidiaGpu(const fs::path& dev) {
  const std::optional<int64_t> cls = ReadInt(dev / "class", 16);
  const std::optional<int64_t> vendor = ReadInt(dev / "vendor", 16);
  if (!cls || !vendor || *vendor != 0x10de) return false;
  const int64_t base_sub = *cls >> 8;  // 0x0300 VGA, 0x0302 3D controller
  return base_sub == 0x0300 || base_sub == 0x0302;
}

}  // namespace

void AddSysfsFacts(const std::string& root, Host& host) {
  bool added_gpus = false, added_nics = false, added_rates = false;
  const fs::path pci = fs::path(root) / "bus/pci/devices";
  for (const std::string& id : List(pci)) {
    const std::string busid = NormalizeBusId(id);
    if (!IsNvidiaGpu(pci / id) || host.FindGpu(busid) >= 0) continue;
    Gpu g;
    g.pci = busid;
    g.pci_node = PlaceChain(root, PciChain(pci / id), host);
    g.numa = g.pci_node >= 0 ? host.pci[g.pci_node].numa : -1;
    host.gpus.push_back(std::move(g));
    added_gpus = true;
  }
  for (const SysfsNic& s : ListSysfsNics(root)) {
    if (s.is_virtual) continue;
    const int existing = host.FindNic(s.name);
    if (existing >= 0) {
      Nic& n = host.nics[existing];
      if (n.gbps <= 0 && s.gbps > 0) {
        n.gbps = s.gbps;
        added_rates = true;
      }
      if (n.link_layer == LinkLayer::kUnknown) n.link_layer = s.link_layer;
      continue;
    }
    Nic n;
    n.name = s.name;
    n.pci = s.pci;
    n.port = s.port;
    n.link_layer = s.link_layer;
    n.gbps = s.gbps;
    n.pci_node = PlaceChain(root, PciChain(fs::path(root) / (s.rdma ? "class/infiniband" : "class/net") / s.name /
                                           "device"), host);
    n.numa = s.numa >= 0 ? s.numa : (n.pci_node >= 0 ? host.pci[n.pci_node].numa : -1);
    added_rates = added_rates || n.gbps > 0;
    host.nics.push_back(std::move(n));
    added_nics = true;
  }
  int max_numa = host.numa_nodes - 1;
  for (const PciNode& p : host.pci) max_numa = std::max(max_numa, p.numa);
  host.numa_nodes = std::max(1, max_numa + 1);
  if (added_gpus) host.Note("gpus", Source::kSysfs);
  if (added_nics) host.Note("nics", Source::kSysfs);
  if (added_rates) host.Note("nic rates", Source::kSysfs);
  if (added_gpus || added_nics) host.Note("pci", Source::kSysfs);
}

}  // namespace trirace::topo
