// The hwloc backend proper (hwloc.h says what becomes what), built as the
// module libtrirace-topo-hwloc.so: the only TriRace object that links
// libhwloc, so that `trirace` and the tests start without it.
#include "topology/discovery/hwloc_module.h"

#include <hwloc.h>
#include <tinyxml2.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace trirace::topo {
namespace {

// PCI class and subclass (hwloc's class_id is 0xCCSS).
constexpr unsigned kClassDisplay = 0x03;  // 0x0300 VGA, 0x0302 3D, 0x0380 other
constexpr unsigned kClassEthernet = 0x0200;
constexpr unsigned kClassInfiniBand = 0x0207;
constexpr unsigned kVendorNvidia = 0x10de;
constexpr unsigned kVendorAmdGpu = 0x1002;

// hwloc_topology_t owns everything hwloc allocated for it.
struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// A topology that keeps the I/O objects `filter` lets through.
absl::StatusOr<TopologyPtr> NewTopology(hwloc_type_filter_e filter) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return SystemError("hwloc_topology_init", errno);
  TopologyPtr topo(raw);
  if (hwloc_topology_set_io_types_filter(raw, filter) != 0) {
    return SystemError("hwloc_topology_set_io_types_filter", errno);
  }
  return topo;
}

using ConstObj = const hwloc_obj*;

bool IsPciBridge(ConstObj obj) {
  return obj != nullptr && obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

// The PCI attributes of a PCI device or a PCI-to-PCI bridge.
using PciAttributes = decltype(hwloc_obj_attr_u::pcidev);
const PciAttributes& PciAttr(ConstObj obj) {
  return obj->type == HWLOC_OBJ_PCI_DEVICE ? obj->attr->pcidev : obj->attr->bridge.upstream.pci;
}

std::string BusId(ConstObj obj) {
  const auto& pci = PciAttr(obj);
  return NormalizeBusId(absl::StrCat(absl::Hex(pci.domain, absl::kZeroPad4), ":", absl::Hex(pci.bus, absl::kZeroPad2), ":",
                                     absl::Hex(pci.dev, absl::kZeroPad2), ".", absl::Hex(pci.func)));
}

// The node a PCI object hangs under in the model, NCCL's way: a PCIe switch
// is its upstream port, and the downstream port between it and a device
// (like a CPU's root port above a switch) is no hop of its own. So the
// parent is the PCI bridge two levels up; nullptr when that is not a PCI
// bridge (the host bridge, or the CPU side): directly under the CPU.
hwloc_obj_t ModelParent(ConstObj obj) {
  hwloc_obj_t port = obj->parent;
  if (!IsPciBridge(port)) return nullptr;
  return IsPciBridge(port->parent) ? port->parent : nullptr;
}

// Ports listed by an OpenFabrics device's "Port<N>State" infos ({1} when none).
std::vector<int> OpenFabricsPorts(ConstObj osdev) {
  std::set<int> ports;
  for (unsigned i = 0; i < osdev->infos_count; ++i) {
    absl::string_view name = osdev->infos[i].name;
    int port = 0;
    if (absl::ConsumePrefix(&name, "Port") && absl::ConsumeSuffix(&name, "State") && absl::SimpleAtoi(name, &port) &&
        port > 0) {
      ports.insert(port);
    }
  }
  if (ports.empty()) return {1};
  return {ports.begin(), ports.end()};
}

// A link layer an info of `osdev` names ("Port<N>LinkLayer", else
// "LinkLayer": not written by hwloc itself, but by hwloc-annotate users).
LinkLayer InfoLinkLayer(hwloc_obj_t osdev, int port) {
  const char* value = hwloc_obj_get_info_by_name(osdev, absl::StrCat("Port", port, "LinkLayer").c_str());
  if (value == nullptr) value = hwloc_obj_get_info_by_name(osdev, "LinkLayer");
  if (value == nullptr) return LinkLayer::kUnknown;
  if (absl::EqualsIgnoreCase(value, "Ethernet")) return LinkLayer::kEthernet;
  if (absl::EqualsIgnoreCase(value, "InfiniBand")) return LinkLayer::kInfiniBand;
  return LinkLayer::kUnknown;
}

// Turns a loaded topology into a Host.
class HostBuilder {
 public:
  HostBuilder(hwloc_topology_t topo, absl::string_view origin) : topo_(topo), origin_(origin) {}

  absl::StatusOr<Host> Build();

 private:
  // The NUMA node (OS index) of the CPU side an object hangs under, or -1.
  int NumaOf(hwloc_obj_t obj) const;
  // The model node of a PCI device or kept bridge, made (with its parents)
  // on first use.
  absl::StatusOr<int> Node(hwloc_obj_t obj);
  absl::Status AddGpu(hwloc_obj_t dev);
  // The NICs of PCI device `dev` (nullptr: OS devices outside the PCI tree,
  // `osdevs`); adds nothing when it is not a NIC.
  absl::Status AddNics(hwloc_obj_t dev, const std::vector<hwloc_obj_t>& osdevs);

  hwloc_topology_t topo_;
  std::string origin_;
  Host host_;
  std::map<ConstObj, int> nodes_;
};

int HostBuilder::NumaOf(hwloc_obj_t obj) const {
  hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topo_, obj);
  if (cpu_side == nullptr || cpu_side->nodeset == nullptr) return -1;
  return hwloc_bitmap_first(cpu_side->nodeset);  // -1 when empty
}

absl::StatusOr<int> HostBuilder::Node(hwloc_obj_t obj) {
  if (auto it = nodes_.find(obj); it != nodes_.end()) return it->second;
  int parent = -1;
  if (hwloc_obj_t up = ModelParent(obj); up != nullptr) {
    absl::StatusOr<int> p = Node(up);
    if (!p.ok()) return p.status();
    parent = *p;
  }
  PciNode node;
  node.busid = BusId(obj);
  if (host_.FindPci(node.busid) >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": PCI bus id ", node.busid, " listed twice"));
  }
  node.parent = parent;
  node.numa = NumaOf(obj);
  node.is_switch = obj->type == HWLOC_OBJ_BRIDGE;
  // GB/s, 0 when unknown; an XML file may say "inf" or "nan" (hwloc reads
  // it with strtof): unknown too.
  const float gbytes = PciAttr(obj).linkspeed;
  node.link_gbps = std::isfinite(gbytes) && gbytes > 0 ? static_cast<double>(gbytes) * 8 : 0;
  const int index = static_cast<int>(host_.pci.size());
  host_.pci.push_back(std::move(node));
  nodes_[obj] = index;
  return index;
}

absl::Status HostBuilder::AddGpu(hwloc_obj_t dev) {
  absl::StatusOr<int> node = Node(dev);
  if (!node.ok()) return node.status();
  Gpu g;
  g.pci = host_.pci[*node].busid;
  g.pci_node = *node;
  g.numa = host_.pci[*node].numa;
  host_.gpus.push_back(std::move(g));
  return absl::OkStatus();
}

absl::Status HostBuilder::AddNics(hwloc_obj_t dev, const std::vector<hwloc_obj_t>& osdevs) {
  const unsigned cls = dev != nullptr ? dev->attr->pcidev.class_id : 0;
  std::vector<Nic> found;
  // An RDMA device first (mlx5_0: the name NCCL's IB transport uses); its
  // netdev (ib0, or eth0 for RoCE) is the same adapter.
  for (hwloc_obj_t os : osdevs) {
    if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || os->name == nullptr) continue;
    for (int port : OpenFabricsPorts(os)) {
      Nic n;
      n.name = os->name;
      n.port = port;
      n.link_layer = InfoLinkLayer(os, port);
      if (n.link_layer == LinkLayer::kUnknown) {
        n.link_layer = cls == kClassEthernet ? LinkLayer::kEthernet : LinkLayer::kInfiniBand;
      }
      found.push_back(std::move(n));
    }
  }
  if (found.empty()) {
    for (hwloc_obj_t os : osdevs) {
      if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || os->name == nullptr) continue;
      Nic n;
      n.name = os->name;
      n.link_layer = cls == kClassInfiniBand ? LinkLayer::kInfiniBand : LinkLayer::kEthernet;  // IPoIB or Ethernet
      found.push_back(std::move(n));
    }
  }
  if (found.empty() && (cls == kClassEthernet || cls == kClassInfiniBand)) {
    // A NIC without a driver hwloc saw (vfio-pci, unbound): known by its bus id.
    Nic n;
    n.link_layer = cls == kClassInfiniBand ? LinkLayer::kInfiniBand : LinkLayer::kEthernet;
    found.push_back(std::move(n));
  }
  if (found.empty()) return absl::OkStatus();

  int node = -1;
  int numa = -1;
  if (dev != nullptr) {
    absl::StatusOr<int> n = Node(dev);
    if (!n.ok()) return n.status();
    node = *n;
    numa = host_.pci[node].numa;
  } else {
    numa = NumaOf(osdevs.front());
  }
  for (Nic& n : found) {
    n.pci = node >= 0 ? host_.pci[node].busid : "";
    n.pci_node = node;
    n.numa = numa;
    if (n.name.empty()) n.name = n.pci;
    host_.nics.push_back(std::move(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<Host> HostBuilder::Build() {
  host_.numa_nodes = std::max(1, hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE));

  // OS devices by the PCI device they belong to (nullptr: none).
  std::map<ConstObj, std::vector<hwloc_obj_t>> osdevs;
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo_, nullptr); os != nullptr; os = hwloc_get_next_osdev(topo_, os)) {
    hwloc_obj_t up = os->parent;
    while (up != nullptr && up->type == HWLOC_OBJ_OS_DEVICE) up = up->parent;
    osdevs[up != nullptr && up->type == HWLOC_OBJ_PCI_DEVICE ? up : nullptr].push_back(os);
  }

  for (hwloc_obj_t dev = hwloc_get_next_pcidev(topo_, nullptr); dev != nullptr;
       dev = hwloc_get_next_pcidev(topo_, dev)) {
    const auto& pci = dev->attr->pcidev;
    const std::vector<hwloc_obj_t>& own = osdevs[dev];
    // A display controller is a GPU when it is NVIDIA's or AMD's, or a
    // compute runtime saw it (a CoProc device: cuda0, opencl0d0, ...); a
    // server's BMC VGA is none of these.
    const bool coproc = std::any_of(own.begin(), own.end(), [](hwloc_obj_t os) {
      return os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC;
    });
    absl::Status s;
    if ((pci.class_id >> 8) == kClassDisplay &&
        (pci.vendor_id == kVendorNvidia || pci.vendor_id == kVendorAmdGpu || coproc)) {
      s = AddGpu(dev);
    } else {
      s = AddNics(dev, own);
    }
    if (!s.ok()) return s;
  }
  // Network / RDMA devices outside the PCI tree, each its own NIC.
  for (hwloc_obj_t os : osdevs[nullptr]) {
    if (absl::Status s = AddNics(nullptr, {os}); !s.ok()) return s;
  }

  // hwloc's order is the tree's; bus ids make it the same for every source.
  std::stable_sort(host_.gpus.begin(), host_.gpus.end(), [](const Gpu& a, const Gpu& b) { return a.pci < b.pci; });
  std::stable_sort(host_.nics.begin(), host_.nics.end(), [](const Nic& a, const Nic& b) {
    if (a.pci.empty() != b.pci.empty()) return !a.pci.empty();
    if (a.pci != b.pci) return a.pci < b.pci;
    if (a.port != b.port) return a.port < b.port;
    return a.name < b.name;
  });
  // hwloc knows no NIC port rate and no NVLink: those facts stay unnoted.
  if (!host_.pci.empty()) host_.Note("pci", Source::kHwloc);
  if (!host_.gpus.empty()) host_.Note("gpus", Source::kHwloc);
  if (!host_.nics.empty()) host_.Note("nics", Source::kHwloc);
  return std::move(host_);
}

// Why tinyxml2 refused `doc`, for someone fixing the file.
std::string Explain(const tinyxml2::XMLDocument& doc) {
  const absl::string_view detail = doc.ErrorStr();
  const size_t at = detail.find("name=");
  const std::string name = at == absl::string_view::npos ? "" : std::string(detail.substr(at + 5));
  const std::string where = name.empty() ? "" : absl::StrCat(" at <", name, ">");
  return absl::StrCat("malformed or truncated XML (", doc.ErrorName(), where,
                      "), expected every element closed and nothing after </topology>");
}

// Names hwloc's own reader takes: tags of [a-z0-9_], attributes of [a-z_].
bool HwlocName(absl::string_view name, bool attribute) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [attribute](char c) {
    return (c >= 'a' && c <= 'z') || c == '_' || (!attribute && c >= '0' && c <= '9');
  });
}

// hwloc's reader parses attributes named *cpuset and *nodeset with
// hwloc_bitmap_sscanf, which asserts (and so aborts the process) on some
// malformed values, one starting with a comma among them. Only the form
// hwloc writes passes: an optional "0xf...f" (every higher bit set), then
// 32-bit words in hex, "0x" in front or not, one comma between them.
bool IsBitmapAttribute(absl::string_view name) {
  return absl::EndsWith(name, "cpuset") || absl::EndsWith(name, "nodeset");
}

bool LooksLikeHwlocBitmap(absl::string_view value) {
  constexpr size_t kMaxChars = 1 << 16;  // 2^18 CPUs in words of 8 hex digits
  if (value.size() > kMaxChars) return false;
  if (absl::ConsumePrefix(&value, "0xf...f") && (value.empty() || !absl::ConsumePrefix(&value, ","))) {
    return value.empty();
  }
  if (value.empty()) return false;
  for (absl::string_view word : absl::StrSplit(value, ',')) {
    absl::ConsumePrefix(&word, "0x");
    if (word.empty() || word.size() > 8 || !std::all_of(word.begin(), word.end(), absl::ascii_isxdigit)) return false;
  }
  return true;
}

// Appends `e` (depth at most 100: tinyxml2's limit) as hwloc writes XML,
// the only layout its own reader (built without libxml2, as on Debian)
// takes: one space before each attribute, values escaped with &#10; &#13;
// &#9; &quot; &lt; &gt; &amp; only, nothing but blanks between tags, no
// comments. <userdata> is left out (nothing in TriRace asks hwloc for it).
absl::Status AppendForHwloc(const tinyxml2::XMLElement& e, absl::string_view origin, int depth, std::string* out) {
  const auto error = [&](int line, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ":", line, ": not an hwloc XML export: ", what));
  };
  if (!HwlocName(e.Name(), false)) return error(e.GetLineNum(), absl::StrCat("<", e.Name(), ">, expected hwloc's names"));
  absl::StrAppend(out, std::string(size_t(depth) * 2, ' '), "<", e.Name());
  for (const tinyxml2::XMLAttribute* a = e.FirstAttribute(); a != nullptr; a = a->Next()) {
    if (!HwlocName(a->Name(), true)) {
      return error(a->GetLineNum(), absl::StrCat("attribute ", a->Name(), " of <", e.Name(), ">, expected hwloc's names"));
    }
    if (IsBitmapAttribute(a->Name()) && !LooksLikeHwlocBitmap(a->Value())) {
      return error(a->GetLineNum(),
                   absl::StrCat(a->Name(), "=\"", absl::string_view(a->Value()).substr(0, 40), "\" of <", e.Name(),
                                ">, expected an hwloc bitmap (hex words separated by commas, e.g. 0x000000ff)"));
    }
    absl::StrAppend(out, " ", a->Name(), "=\"",
                    absl::StrReplaceAll(a->Value(), {{"&", "&amp;"}, {"\n", "&#10;"}, {"\r", "&#13;"}, {"\t", "&#9;"},
                                                     {"\"", "&quot;"}, {"<", "&lt;"}, {">", "&gt;"}}),
                    "\"");
  }
  std::string inner;
  bool text = false;
  for (const tinyxml2::XMLNode* n = e.FirstChild(); n != nullptr; n = n->NextSibling()) {
    if (const tinyxml2::XMLElement* c = n->ToElement(); c != nullptr) {
      if (absl::string_view(c->Name()) == "userdata") continue;
      if (inner.empty() || text) absl::StrAppend(&inner, "\n");
      if (absl::Status s = AppendForHwloc(*c, origin, depth + 1, &inner); !s.ok()) return s;
      text = false;
    } else if (const tinyxml2::XMLText* t = n->ToText(); t != nullptr) {
      // Content (distances' values) is read raw, up to the next '<'.
      if (absl::StrContains(t->Value(), "<")) return error(n->GetLineNum(), "text with '<', expected none");
      absl::StrAppend(&inner, t->Value());
      text = true;
    }
  }
  if (inner.empty()) {
    absl::StrAppend(out, "/>\n");
  } else {
    absl::StrAppend(out, ">", inner, text ? "" : std::string(size_t(depth) * 2, ' '), "</", e.Name(), ">\n");
  }
  return absl::OkStatus();
}

// The document hwloc reads: the <topology> element as hwloc writes it,
// whose opening tag its reader matches exactly: <topology version="M.m">.
absl::StatusOr<std::string> ForHwloc(const tinyxml2::XMLElement& topology, absl::string_view origin) {
  unsigned major = 0, minor = 0;
  const char* version = topology.Attribute("version");
  std::vector<absl::string_view> parts;
  if (version != nullptr) parts = absl::StrSplit(version, '.');
  if (version != nullptr && (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &major) ||
                             !absl::SimpleAtoi(parts[1], &minor))) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ":", topology.GetLineNum(),
                                                   ": not an hwloc XML export: <topology version=\"", version,
                                                   "\">, expected a version M.m"));
  }
  for (const tinyxml2::XMLAttribute* a = topology.FirstAttribute(); a != nullptr; a = a->Next()) {
    if (absl::string_view(a->Name()) != "version") {
      return absl::InvalidArgumentError(absl::StrCat(origin, ":", a->GetLineNum(), ": not an hwloc XML export: ",
                                                     "attribute ", a->Name(), " of <topology>, expected only version"));
    }
  }
  std::string out = version != nullptr ? absl::StrCat("<topology version=\"", major, ".", minor, "\">\n") : "<topology>\n";
  for (const tinyxml2::XMLElement* c = topology.FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
    if (absl::string_view(c->Name()) == "userdata") continue;
    if (absl::Status s = AppendForHwloc(*c, origin, 1, &out); !s.ok()) return s;
  }
  absl::StrAppend(&out, "</topology>\n");
  return out;
}

// The first node under `e` that is neither an element nor blank text (text,
// CDATA, a declaration or unknown markup), or nullptr.
const tinyxml2::XMLNode* NonElementChild(const tinyxml2::XMLElement& e) {
  for (const tinyxml2::XMLNode* n = e.FirstChild(); n != nullptr; n = n->NextSibling()) {
    if (n->ToElement() != nullptr || n->ToComment() != nullptr) continue;  // comments are removed before hwloc
    const tinyxml2::XMLText* text = n->ToText();
    if (text == nullptr || text->CData() || !absl::StripAsciiWhitespace(text->Value()).empty()) return n;
  }
  return nullptr;
}

// What an <object> may hold besides <object>s, as hwloc's reader takes it.
// hwloc 2.9 leaks the object it is reading (a few hundred bytes per file)
// when it refuses one of these children (an element it does not know, an
// attribute it does not know, text, a <page_type> elsewhere than in a NUMA
// node or the root): such a file is refused here instead, naming the line.
absl::Status CheckObjectChildren(const tinyxml2::XMLElement& topology, absl::string_view origin) {
  const char* version = topology.Attribute("version");
  const bool v1 = version == nullptr || std::atoi(version) < 2;  // v1 exports keep <distances> in objects
  std::vector<std::pair<const tinyxml2::XMLElement*, bool>> todo;  // (object, is the root object)
  for (auto* o = topology.FirstChildElement("object"); o != nullptr; o = o->NextSiblingElement("object")) {
    todo.push_back({o, true});
  }
  while (!todo.empty()) {
    const auto [object, is_root] = todo.back();
    todo.pop_back();
    const char* type = object->Attribute("type");
    // hwloc 2.9 reads a v2 object with a set but not its complete set, then
    // crashes (a NULL bitmap in hwloc_bitmap_or): both, or neither.
    for (const char* set : {"cpuset", "nodeset"}) {
      const std::string complete = absl::StrCat("complete_", set);
      if ((object->Attribute(set) == nullptr) != (object->Attribute(complete.c_str()) == nullptr)) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ":", object->GetLineNum(), ": not an hwloc XML export: <object type=\"", type != nullptr ? type : "",
            "\"> with only one of ", set, " and ", complete, ", expected both or neither"));
      }
    }
    if (const tinyxml2::XMLNode* n = NonElementChild(*object); n != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ":", n->GetLineNum(), ": not an hwloc XML export: text in ",
                                                     "<object type=\"", type != nullptr ? type : "",
                                                     "\">, expected only elements"));
    }
    for (const tinyxml2::XMLElement* c = object->FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
      const absl::string_view name = c->Name();
      const auto error = [&](absl::string_view what) {
        return absl::InvalidArgumentError(absl::StrCat(origin, ":", c->GetLineNum(), ": not an hwloc XML export: <",
                                                       name, "> in <object type=\"", type != nullptr ? type : "",
                                                       "\">", what));
      };
      std::vector<absl::string_view> attributes;
      if (name == "object") {
        todo.push_back({c, false});
        continue;
      } else if (name == "info") {
        attributes = {"name", "value"};
      } else if (name == "page_type") {
        if (!is_root && (type == nullptr || absl::string_view(type) != "NUMANode")) {
          return error(", expected <page_type> only in a NUMANode or the root object");
        }
        attributes = {"size", "count"};
      } else if (name == "userdata") {
        attributes = {"length", "encoding", "name"};
      } else if (name == "distances" && v1) {
        continue;
      } else {
        return error(", expected <object>, <info>, <page_type> or <userdata>");
      }
      for (const tinyxml2::XMLAttribute* a = c->FirstAttribute(); a != nullptr; a = a->Next()) {
        if (std::find(attributes.begin(), attributes.end(), a->Name()) == attributes.end()) {
          return error(absl::StrCat(" with attribute ", a->Name(), ", expected only ", absl::StrJoin(attributes, ", ")));
        }
      }
      if (name != "userdata" && (c->FirstChildElement() != nullptr || NonElementChild(*c) != nullptr)) {
        return error(" holds something, expected an empty element");
      }
    }
  }
  return absl::OkStatus();
}

// The text hwloc is to read, once it is well-formed XML with root <topology>.
absl::StatusOr<std::string> CheckedXml(absl::string_view text, absl::string_view origin) {
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");  // a UTF-8 byte-order mark
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected an hwloc XML export"));
  }
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ":", std::max(doc.ErrorLineNum(), 1),
                                                   ": not an hwloc XML export: ", Explain(doc)));
  }
  const tinyxml2::XMLElement* root = doc.RootElement();
  if (root == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": not an hwloc XML export: no element, expected <topology>"));
  }
  if (absl::string_view(root->Name()) != "topology") {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not an hwloc XML export: root element <", root->Name(),
                                                   ">, expected <topology>"));
  }
  if (const tinyxml2::XMLElement* extra = root->NextSiblingElement(); extra != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ":", extra->GetLineNum(), ": not an hwloc XML export: <",
                                                   extra->Name(), "> after </topology>, expected one root element"));
  }
  if (root->FirstChildElement("object") == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": not an hwloc XML export: <topology> holds no <object>, expected the Machine"));
  }
  if (absl::Status s = CheckObjectChildren(*root, origin); !s.ok()) return s;
  return ForHwloc(*root, origin);
}

absl::StatusOr<Host> DiscoverHwlocMachine() {
  // Only what matters for placement: GPUs, NICs and the bridges above them.
  absl::StatusOr<TopologyPtr> topo = NewTopology(HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!topo.ok()) return topo.status();
  if (hwloc_topology_load(topo->get()) != 0) return SystemError("hwloc_topology_load", errno);
  return HostBuilder(topo->get(), "hwloc").Build();
}

absl::StatusOr<Host> ParseHwlocXmlText(absl::string_view text, absl::string_view origin) {
  absl::StatusOr<std::string> xml = CheckedXml(text, origin);
  if (!xml.ok()) return xml.status();
  if (xml->size() >= static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": too large for hwloc (", xml->size(), " bytes)"));
  }
  // Everything the file lists: the filter applies to XML imports too.
  absl::StatusOr<TopologyPtr> topo = NewTopology(HWLOC_TYPE_FILTER_KEEP_ALL);
  if (!topo.ok()) return topo.status();
  // The length counts the terminating NUL, as hwloc's exports do.
  if (hwloc_topology_set_xmlbuffer(topo->get(), xml->c_str(), static_cast<int>(xml->size() + 1)) != 0 ||
      hwloc_topology_load(topo->get()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not an hwloc XML export: hwloc ", HWLOC_VERSION,
                                                   " refused it (HWLOC_XML_VERBOSE=1 prints why)"));
  }
  return HostBuilder(topo->get(), origin).Build();
}

}  // namespace

}  // namespace trirace::topo

extern "C" __attribute__((visibility("default"))) const TriraceHwlocApiV1* trirace_topo_hwloc_v1() {
  static const TriraceHwlocApiV1 api = {
      kTriraceHwlocAbi, sizeof(trirace::topo::Host), HWLOC_VERSION, &trirace::topo::DiscoverHwlocMachine,
      &trirace::topo::ParseHwlocXmlText,
  };
  return &api;
}
