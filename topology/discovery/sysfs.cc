#include "topology/discovery/sysfs.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/net_interfaces.h"

namespace trirace::topo {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kArphrdEther = 1;
constexpr int64_t kArphrdInfiniband = 32;
constexpr int64_t kVendorNvidia = 0x10de;

// The first line of `path`, trimmed; nullopt when it cannot be read.
std::optional<std::string> ReadLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(line));
}

// A decimal (or, with `hex`, "0x"-prefixed hexadecimal) number in `path`.
std::optional<int64_t> ReadInt(const fs::path& path, bool hex = false) {
  const std::optional<std::string> text = ReadLine(path);
  int64_t v = 0;
  if (!text) return std::nullopt;
  absl::string_view t = *text;
  if (hex ? absl::ConsumePrefix(&t, "0x") && absl::SimpleHexAtoi(t, &v) : absl::SimpleAtoi(t, &v)) return v;
  return std::nullopt;
}

// The names in a folder, sorted; none when it cannot be read.
std::vector<std::string> List(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The PCI functions on a resolved sysfs device path, root first
// (normalised bus ids); empty when there is no PCI function on it.
std::vector<std::string> BusIdsOnPath(const std::string& real) {
  std::vector<std::string> chain;
  for (const fs::path& part : fs::path(real)) {
    const std::string id = NormalizeBusId(part.string());
    if (LooksLikeBusId(id)) chain.push_back(id);
  }
  return chain;
}

// The PCI functions above <dir>/<name>/device (a netdev's or an RDMA
// device's), root first.
std::vector<std::string> PciChain(const std::string& dir, const std::string& name) {
  return BusIdsOnPath(SysfsDevicePath(name, dir));
}

// A numa_node file's value; -1 when missing, odd or negative.
int ReadNuma(const fs::path& pci_dir) {
  const std::optional<int64_t> numa = ReadInt(pci_dir / "numa_node");
  return numa && *numa >= 0 && *numa < (1 << 16) ? static_cast<int>(*numa) : -1;
}

LinkLayer ParseLinkLayer(const std::optional<std::string>& text) {
  if (!text) return LinkLayer::kUnknown;
  if (*text == "InfiniBand") return LinkLayer::kInfiniBand;
  if (*text == "Ethernet") return LinkLayer::kEthernet;
  return LinkLayer::kUnknown;
}

// "4: ACTIVE" (and "5: ACTIVE_DEFER") are up; anything else is not.
bool PortActive(const std::optional<std::string>& state) {
  if (!state) return false;
  const size_t colon = state->find(':');
  const absl::string_view name =
      absl::StripAsciiWhitespace(colon == std::string::npos ? *state : absl::string_view(*state).substr(colon + 1));
  return name == "ACTIVE" || name == "ACTIVE_DEFER";
}

// The netdev of port `port` of the RDMA device at `dev` (see ListSysfsNics).
std::string PortNetdev(const fs::path& dev, int port) {
  const fs::path p = dev / "ports" / std::to_string(port);
  if (std::optional<std::string> ndev = ReadLine(p / "gid_attrs/ndevs/0"); ndev && !ndev->empty()) return *ndev;
  const std::vector<std::string> netdevs = List(dev / "device/net");
  for (const std::string& n : netdevs) {
    if (ReadInt(dev / "device/net" / n / "dev_port") == port - 1) return n;
  }
  return netdevs.size() == 1 ? netdevs[0] : "";
}

}  // namespace

double IbRateGbps(absl::string_view rate) {
  const std::vector<absl::string_view> words = absl::StrSplit(rate, ' ', absl::SkipEmpty());
  double v = 0;
  if (words.size() < 2 || !absl::StartsWith(words[1], "Gb/s") || !absl::SimpleAtod(words[0], &v)) return 0;
  return v > 0 && v < 1e6 ? v : 0;
}

std::vector<SysfsNic> ListSysfsNics(absl::string_view root_text) {
  const fs::path root(std::string{root_text});
  const fs::path pci_devices = root / "bus/pci/devices";
  std::vector<SysfsNic> out;
  std::set<std::string> rdma_netdevs, rdma_functions;
  const fs::path ib = root / "class/infiniband";
  for (const std::string& dev : List(ib)) {
    const std::vector<std::string> chain = PciChain(ib.string(), dev);
    std::vector<std::pair<int, std::string>> ports;  // numeric order: 2 before 10
    for (const std::string& p : List(ib / dev / "ports")) {
      int port = 0;
      if (absl::SimpleAtoi(p, &port) && port >= 1 && port <= 255) ports.emplace_back(port, p);
    }
    std::sort(ports.begin(), ports.end());
    if (!chain.empty()) rdma_functions.insert(chain.back());
    for (const auto& [port, dir] : ports) {
      const fs::path p = ib / dev / "ports" / dir;
      SysfsNic n;
      n.name = dev;
      n.rdma = true;
      n.port = port;
      n.pci = chain.empty() ? "" : chain.back();
      n.is_virtual = chain.empty();
      n.numa = n.pci.empty() ? -1 : ReadNuma(pci_devices / n.pci);
      n.up = PortActive(ReadLine(p / "state"));
      if (std::optional<std::string> rate = ReadLine(p / "rate")) n.gbps = IbRateGbps(*rate);
      n.link_layer = ParseLinkLayer(ReadLine(p / "link_layer"));
      n.netdev = PortNetdev(ib / dev, port);
      if (!n.netdev.empty()) rdma_netdevs.insert(n.netdev);
      out.push_back(std::move(n));
    }
  }
  const std::string net = (root / "class/net").string();
  for (const std::string& ifname : List(net)) {
    if (rdma_netdevs.count(ifname) > 0) continue;
    const std::vector<std::string> chain = PciChain(net, ifname);
    if (!chain.empty() && rdma_functions.count(chain.back()) > 0) continue;  // an RDMA port's netdev
    SysfsNic n;
    n.name = ifname;
    n.pci = chain.empty() ? "" : chain.back();
    n.is_virtual = chain.empty();
    n.numa = n.pci.empty() ? -1 : ReadNuma(pci_devices / n.pci);
    const std::optional<int64_t> type = ReadInt(fs::path(net) / ifname / "type");
    n.link_layer = type == kArphrdEther         ? LinkLayer::kEthernet
                   : type == kArphrdInfiniband ? LinkLayer::kInfiniBand
                                                : LinkLayer::kUnknown;
    n.up = ReadLine(fs::path(net) / ifname / "operstate") == std::optional<std::string>("up");
    if (std::optional<int64_t> mbps = SysfsLinkSpeedMbps(ifname, net)) n.gbps = static_cast<double>(*mbps) / 1000.0;
    out.push_back(std::move(n));
  }
  return out;
}

bool HasActiveRdmaPort(absl::string_view root) {
  for (const SysfsNic& n : ListSysfsNics(root)) {
    if (n.rdma && n.up) return true;
  }
  return false;
}

namespace {

// Adds sysfs's facts to one host: the PCIe tree on demand, then GPUs and
// NICs placed in it.
class SysfsMerger {
 public:
  SysfsMerger(const fs::path& root, Host& host) : root_(root), host_(host) {
    int nodes = 0;
    for (const std::string& name : List(root / "devices/system/node")) {
      int n = 0;
      absl::string_view digits = name;
      if (absl::ConsumePrefix(&digits, "node") && absl::SimpleAtoi(digits, &n) && n >= 0 && n < (1 << 16)) {
        nodes = std::max(nodes, n + 1);
      }
    }
    host_.numa_nodes = std::max(host_.numa_nodes, nodes);
  }

  void AddGpus() {
    const fs::path devices = root_ / "bus/pci/devices";
    for (const std::string& id : List(devices)) {
      const std::string busid = NormalizeBusId(id);
      if (!IsNvidiaGpu(devices / id) || host_.FindGpu(busid) >= 0) continue;
      Gpu g;
      g.pci = busid;
      std::error_code ec;
      const fs::path real = fs::canonical(devices / id, ec);
      g.pci_node = Place(ec ? std::vector<std::string>{} : BusIdsOnPath(real.string()), busid);
      g.numa = g.pci_node >= 0 ? host_.pci[g.pci_node].numa : -1;
      host_.gpus.push_back(std::move(g));
      added_gpus_ = true;
    }
  }

  void AddNics(const std::vector<SysfsNic>& nics) {
    std::set<std::string> active_devices;
    for (const SysfsNic& s : nics) {
      if (s.rdma && s.up) active_devices.insert(s.name);
    }
    std::set<std::string> taken_devices;
    for (const SysfsNic& s : nics) {
      if (s.is_virtual) continue;
      if (s.rdma) {
        // Active ports; a device without one: its first port.
        const bool wanted = active_devices.count(s.name) > 0 ? s.up : taken_devices.count(s.name) == 0;
        if (!wanted) continue;
        taken_devices.insert(s.name);
      }
      Merge(s);
    }
  }

  void Finish() {
    int max_numa = host_.numa_nodes - 1;
    for (const PciNode& p : host_.pci) max_numa = std::max(max_numa, p.numa);
    for (const Nic& n : host_.nics) max_numa = std::max(max_numa, n.numa);
    host_.numa_nodes = std::max(1, max_numa + 1);
    if (added_gpus_) NoteFirst(host_, "gpus", Source::kSysfs);
    if (added_nics_) NoteFirst(host_, "nics", Source::kSysfs);
    if (added_rates_) NoteFirst(host_, "nic rates", Source::kSysfs);
    if (added_pci_) NoteFirst(host_, "pci", Source::kSysfs);
  }

 private:
  static bool IsNvidiaGpu(const fs::path& dev) {
    const std::optional<int64_t> cls = ReadInt(dev / "class", true);
    const std::optional<int64_t> vendor = ReadInt(dev / "vendor", true);
    if (!cls || !vendor || *vendor != kVendorNvidia) return false;
    const int64_t base_sub = *cls >> 8;  // 0x0300 VGA, 0x0302 3D controller
    return base_sub == 0x0300 || base_sub == 0x0302;
  }

  // The NUMA node of a new PCI node: its own, else its parent's, else 0
  // when the machine has one NUMA node.
  int NodeNuma(const std::string& busid, int parent) const {
    const int own = ReadNuma(root_ / "bus/pci/devices" / busid);
    if (own >= 0) return own;
    if (parent >= 0 && host_.pci[parent].numa >= 0) return host_.pci[parent].numa;
    return host_.numa_nodes == 1 ? 0 : -1;
  }

  // The index of `endpoint`'s node, adding it and the switches above it
  // (the functions of `full`, root first) where `host_` lacks them. On a
  // PCIe path the functions alternate root port (dropped), switch upstream
  // port (a node), downstream port (dropped), upstream port of a nested
  // switch, ... so a GPU and a NIC under one switch share their parent
  // (PIX). -1 when `full` has no PCI function.
  int Place(const std::vector<std::string>& full, const std::string& endpoint) {
    if (full.empty() || full.back() != endpoint) return -1;
    std::vector<std::string> chain;
    for (size_t i = 1; i + 1 < full.size(); i += 2) chain.push_back(full[i]);
    chain.push_back(endpoint);
    int parent = -1;
    for (size_t i = 0; i < chain.size(); ++i) {
      const fs::path dev = root_ / "bus/pci/devices" / chain[i];
      const std::optional<std::string> speed = ReadLine(dev / "current_link_speed");
      const std::optional<std::string> width = ReadLine(dev / "current_link_width");
      const double gbps = speed && width ? PcieGbps(*speed, *width) : 0;
      int at = host_.FindPci(chain[i]);
      if (at < 0) {
        PciNode node;
        node.busid = chain[i];
        node.parent = parent;
        node.is_switch = i + 1 < chain.size();
        node.numa = NodeNuma(chain[i], parent);
        node.link_gbps = gbps;
        host_.pci.push_back(std::move(node));
        at = static_cast<int>(host_.pci.size()) - 1;
        added_pci_ = true;
      } else {
        PciNode& node = host_.pci[at];
        if (node.link_gbps <= 0) node.link_gbps = gbps;
        if (node.numa < 0) node.numa = NodeNuma(chain[i], node.parent);
      }
      parent = at;
    }
    return parent;
  }

  // The NIC of `host_` that `s` is, or -1 when it is new; -2 when an
  // earlier backend listed the RDMA device with other ports only.
  int Find(const SysfsNic& s) const {
    bool device_known = false;
    for (size_t i = 0; i < host_.nics.size(); ++i) {
      if (host_.nics[i].name != s.name) continue;
      if (host_.nics[i].port == s.port) return static_cast<int>(i);
      device_known = true;
    }
    if (device_known) return -2;
    for (size_t i = 0; i < host_.nics.size(); ++i) {
      if (!s.pci.empty() && host_.nics[i].name == s.pci) return static_cast<int>(i);
    }
    return -1;
  }

  void Merge(const SysfsNic& s) {
    const int found = Find(s);
    if (found == -2) return;
    const std::string dir = (root_ / (s.rdma ? "class/infiniband" : "class/net")).string();
    if (found >= 0) {
      Nic& n = host_.nics[found];
      if (n.gbps <= 0 && s.gbps > 0) {
        n.gbps = s.gbps;
        added_rates_ = true;
      }
      if (n.link_layer == LinkLayer::kUnknown) n.link_layer = s.link_layer;
      if (n.pci_node < 0 && !s.pci.empty() && (n.pci.empty() || n.pci == s.pci)) {
        n.pci = s.pci;
        n.pci_node = Place(PciChain(dir, s.name), s.pci);
      }
      if (n.numa < 0) n.numa = s.numa >= 0 ? s.numa : (n.pci_node >= 0 ? host_.pci[n.pci_node].numa : -1);
      return;
    }
    Nic n;
    n.name = s.name;
    n.pci = s.pci;
    n.port = s.port;
    n.link_layer = s.link_layer;
    n.gbps = s.gbps;
    n.pci_node = Place(PciChain(dir, s.name), s.pci);
    n.numa = s.numa >= 0 ? s.numa : (n.pci_node >= 0 ? host_.pci[n.pci_node].numa : -1);
    added_rates_ = added_rates_ || n.gbps > 0;
    host_.nics.push_back(std::move(n));
    added_nics_ = true;
  }

  const fs::path root_;
  Host& host_;
  bool added_gpus_ = false, added_nics_ = false, added_rates_ = false, added_pci_ = false;
};

}  // namespace

void NoteFirst(Host& host, absl::string_view fact, Source source) {
  for (const Host::Provenance& p : host.provenance) {
    if (p.fact == fact) return;
  }
  host.Note(fact, source);
}

void AddSysfsFacts(absl::string_view root, Host& host) {
  SysfsMerger merger(fs::path(std::string{root}), host);
  merger.AddGpus();
  merger.AddNics(ListSysfsNics(root));
  merger.Finish();
}

}  // namespace trirace::topo
