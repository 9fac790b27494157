#include "topology/discovery/nccl_xml.h"

#include <tinyxml2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace trirace::topo {
namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

// PCI class codes are 0xCCSSPP; these compare the class and subclass.
constexpr uint32_t kClassBridge = 0x0604;
constexpr uint32_t kClassVga = 0x0300;
constexpr uint32_t kClass3d = 0x0302;
constexpr uint32_t kClassEthernet = 0x0200;
constexpr uint32_t kClassInfiniBand = 0x0207;
constexpr uint32_t kClassNvSwitch = 0x0680;
// More NVLinks than any GPU has: a typo, and sums stay far from overflow.
constexpr int kMaxNvLinks = 1024;

// Elements NCCL writes that this parser does not need: skipped wherever they
// appear. Anything else outside its place is an error.
bool IsIgnoredNcclElement(absl::string_view name) { return name == "nvlink" || name == "c2c" || name == "pcilink"; }

// Per link, per direction, from the GPU's compute capability (<gpu sm>), as
// the hardware is specified: NVLink 1 (P100) 20 GB/s; NVLink 2-4 (V100,
// Turing bridges, A100, H100) 25 GB/s; GA10x bridges 14.0625 GB/s; NVLink 5
// (Blackwell) 50 GB/s. 0 where not known.
double NvLinkGbps(int sm) {
  if (sm == 86) return 112.5;
  switch (sm / 10) {
    case 6:
      return 160;
    case 7:
    case 8:
    case 9:
      return 200;
    case 10:
      return 400;
    default:
      return 0;
  }
}

// What a tinyxml2 error means for someone fixing the file.
std::string Explain(const XMLDocument& doc) {
  // ErrorStr ends with ": XMLElement name=X" when it knows the element.
  const absl::string_view detail = doc.ErrorStr();
  const size_t at = detail.find("name=");
  const std::string name = at == absl::string_view::npos ? "" : std::string(detail.substr(at + 5));
  const std::string elem = name.empty() ? "an element" : absl::StrCat("<", name, ">");
  switch (doc.ErrorID()) {
    case tinyxml2::XML_ERROR_EMPTY_DOCUMENT:
      return "empty file, expected a <system> element";
    case tinyxml2::XML_ERROR_PARSING_ATTRIBUTE:
      return absl::StrCat("malformed attribute in ", elem, ", expected name=\"value\"");
    case tinyxml2::XML_ERROR_MISMATCHED_ELEMENT:
      return absl::StrCat("closing tag does not match ", elem, ", expected </", name.empty() ? "..." : name, ">");
    case tinyxml2::XML_ERROR_PARSING_ELEMENT:
      return absl::StrCat("malformed ", elem, ", expected <name attr=\"value\"> ... </name> or <name .../>");
    case tinyxml2::XML_ELEMENT_DEPTH_EXCEEDED:
      return "elements nested too deep";
    default:
      return absl::StrCat("malformed or truncated XML (", doc.ErrorName(),
                          "), expected every element closed and nothing after </system>");
  }
}

class Parser {
 public:
  explicit Parser(absl::string_view origin) : origin_(origin) {}

  absl::StatusOr<Host> Run(absl::string_view text);

 private:
  absl::Status Error(int line, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ":", std::max(line, 1), ": ", what));
  }
  absl::Status Error(const XMLElement& e, absl::string_view what) const { return Error(e.GetLineNum(), what); }

  // Every child of `e` is one of `handled` or an ignored NCCL element.
  absl::Status CheckChildren(const XMLElement& e, std::initializer_list<absl::string_view> handled) const;
  // Optional integer / hex attributes: absent leaves *out as is.
  absl::Status IntAttr(const XMLElement& e, const char* name, int* out) const;
  absl::Status HexAttr(const XMLElement& e, const char* name, uint32_t* out) const;

  absl::Status Cpu(const XMLElement& cpu);
  absl::Status Pci(const XMLElement& pci, int parent, int numa);
  absl::Status AddGpu(const XMLElement* gpu, int node, int numa);
  absl::Status AddNics(const XMLElement& owner, const XMLElement* nic, int node, int numa, LinkLayer layer);

  std::string origin_;
  Host host_;
  std::set<int> numa_ids_;
  bool saw_gpu_element_ = false;
};

absl::Status Parser::CheckChildren(const XMLElement& e, std::initializer_list<absl::string_view> handled) const {
  for (const XMLElement* c = e.FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
    const absl::string_view name = c->Name();
    if (std::find(handled.begin(), handled.end(), name) != handled.end() || IsIgnoredNcclElement(name)) continue;
    const bool known = name == "system" || name == "cpu" || name == "pci" || name == "gpu" || name == "nic" ||
                       name == "net";
    std::vector<std::string> wanted;
    for (absl::string_view h : handled) wanted.push_back(absl::StrCat("<", h, ">"));
    return Error(*c, absl::StrCat(known ? "misplaced" : "unknown", " element <", name, "> in <", e.Name(),
                                  ">, expected ", wanted.empty() ? "none" : absl::StrJoin(wanted, " or ")));
  }
  return absl::OkStatus();
}

absl::Status Parser::IntAttr(const XMLElement& e, const char* name, int* out) const {
  const char* v = e.Attribute(name);
  if (v == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtoi(v, out)) {
    return Error(e, absl::StrCat("<", e.Name(), "> ", name, "=\"", v, "\", expected an integer"));
  }
  return absl::OkStatus();
}

absl::Status Parser::HexAttr(const XMLElement& e, const char* name, uint32_t* out) const {
  const char* v = e.Attribute(name);
  if (v == nullptr) return absl::OkStatus();
  if (!absl::SimpleHexAtoi(v, out)) {
    return Error(e, absl::StrCat("<", e.Name(), "> ", name, "=\"", v, "\", expected a hex class like 0x030200"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Host> Parser::Run(absl::string_view text) {
  // tinyxml2 reports an all-blank input without a line; say it here.
  if (absl::StripAsciiWhitespace(text).empty()) return Error(1, "empty file, expected a <system> element");
  XMLDocument doc;
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) return Error(doc.ErrorLineNum(), Explain(doc));
  const XMLElement* root = doc.RootElement();
  if (root == nullptr) return Error(1, "no element, expected <system>");
  if (absl::string_view(root->Name()) != "system") {
    return Error(*root, absl::StrCat("root element <", root->Name(), ">, expected <system>"));
  }
  if (const XMLElement* extra = root->NextSiblingElement(); extra != nullptr) {
    return Error(*extra, absl::StrCat("<", extra->Name(), "> after </system>, expected one <system> element"));
  }
  if (absl::Status s = CheckChildren(*root, {"cpu"}); !s.ok()) return s;
  for (const XMLElement* cpu = root->FirstChildElement("cpu"); cpu != nullptr; cpu = cpu->NextSiblingElement("cpu")) {
    if (absl::Status s = Cpu(*cpu); !s.ok()) return s;
  }

  host_.numa_nodes = std::max<int>(1, static_cast<int>(numa_ids_.size()));
  if (!host_.pci.empty()) host_.Note("pci", Source::kNcclXml);
  if (!host_.gpus.empty()) host_.Note("gpus", Source::kNcclXml);
  if (!host_.nics.empty()) host_.Note("nics", Source::kNcclXml);
  if (!host_.nics.empty() &&
      std::all_of(host_.nics.begin(), host_.nics.end(), [](const Nic& n) { return n.gbps > 0; })) {
    host_.Note("nic rates", Source::kNcclXml);
  }
  // NCCL lists a GPU's NVLinks under its <gpu>: one without any has none.
  // A PCI-tree-only file says nothing about NVLink.
  if (saw_gpu_element_) host_.Note("nvlink", Source::kNcclXml);
  return std::move(host_);
}

absl::Status Parser::Cpu(const XMLElement& cpu) {
  const char* id = cpu.Attribute("numaid");
  if (id == nullptr) return Error(cpu, "<cpu> without numaid");
  int numa = -1;
  if (absl::Status s = IntAttr(cpu, "numaid", &numa); !s.ok()) return s;
  if (numa < -1) return Error(cpu, absl::StrCat("<cpu> numaid=\"", id, "\", expected -1 or more"));
  numa_ids_.insert(numa);
  if (absl::Status s = CheckChildren(cpu, {"pci", "nic"}); !s.ok()) return s;
  for (const XMLElement* c = cpu.FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
    const absl::string_view name = c->Name();
    absl::Status s;
    if (name == "pci") {
      s = Pci(*c, -1, numa);
    } else if (name == "nic") {
      // A NIC NCCL found outside the PCI tree (a virtual device).
      s = AddNics(*c, c, -1, numa, LinkLayer::kUnknown);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Parser::Pci(const XMLElement& pci, int parent, int numa) {
  const char* raw = pci.Attribute("busid");
  if (raw == nullptr || absl::StripAsciiWhitespace(raw).empty()) return Error(pci, "<pci> without busid");
  PciNode node;
  node.busid = NormalizeBusId(raw);
  if (!LooksLikeBusId(node.busid)) {
    return Error(pci, absl::StrCat("<pci> busid=\"", raw, "\", expected a PCI bus id like 0000:3b:00.0"));
  }
  if (host_.FindPci(node.busid) >= 0) return Error(pci, absl::StrCat("duplicate <pci> busid=\"", raw, "\""));
  uint32_t cls = 0;
  if (absl::Status s = HexAttr(pci, "class", &cls); !s.ok()) return s;
  if (absl::Status s = CheckChildren(pci, {"pci", "gpu", "nic"}); !s.ok()) return s;

  // NCCL decides by the <gpu> / <nic> child; files with only the PCI tree
  // leave the class to tell.
  const XMLElement* gpu = pci.FirstChildElement("gpu");
  const XMLElement* nic = pci.FirstChildElement("nic");
  if (gpu != nullptr && gpu->NextSiblingElement("gpu") != nullptr) {
    return Error(*gpu->NextSiblingElement("gpu"), "second <gpu> in one <pci>, expected one");
  }
  if (nic != nullptr && nic->NextSiblingElement("nic") != nullptr) {
    return Error(*nic->NextSiblingElement("nic"), "second <nic> in one <pci>, expected one");
  }
  if (gpu != nullptr && nic != nullptr) return Error(*nic, "<pci> holds both <gpu> and <nic>, expected one");
  const uint32_t sub = cls >> 8;
  const bool is_gpu = gpu != nullptr || (nic == nullptr && (sub == kClass3d || sub == kClassVga));
  const bool is_nic = !is_gpu && (nic != nullptr || sub == kClassInfiniBand || sub == kClassEthernet);

  node.parent = parent;
  node.numa = numa;
  node.is_switch = sub == kClassBridge && !is_gpu && !is_nic;
  const char* speed = pci.Attribute("link_speed");
  const char* width = pci.Attribute("link_width");
  node.link_gbps = speed != nullptr && width != nullptr ? PcieGbps(speed, width) : 0;
  const int index = static_cast<int>(host_.pci.size());
  host_.pci.push_back(std::move(node));

  absl::Status s;
  if (is_gpu) {
    s = AddGpu(gpu, index, numa);
  } else if (is_nic) {
    const LinkLayer layer = sub == kClassInfiniBand ? LinkLayer::kInfiniBand
                            : sub == kClassEthernet ? LinkLayer::kEthernet
                                                    : LinkLayer::kUnknown;
    s = AddNics(pci, nic, index, numa, layer);
  }
  if (!s.ok()) return s;
  for (const XMLElement* c = pci.FirstChildElement("pci"); c != nullptr; c = c->NextSiblingElement("pci")) {
    if (absl::Status cs = Pci(*c, index, numa); !cs.ok()) return cs;
  }
  return absl::OkStatus();
}

absl::Status Parser::AddGpu(const XMLElement* gpu, int node, int numa) {
  Gpu g;
  g.pci = host_.pci[node].busid;
  g.pci_node = node;
  g.numa = numa;
  if (gpu != nullptr) {
    saw_gpu_element_ = true;
    int sm = 0;
    if (absl::Status s = IntAttr(*gpu, "dev", &g.dev); !s.ok()) return s;
    if (absl::Status s = IntAttr(*gpu, "sm", &sm); !s.ok()) return s;
    if (absl::Status s = CheckChildren(*gpu, {"nvlink"}); !s.ok()) return s;
    for (const XMLElement* l = gpu->FirstChildElement("nvlink"); l != nullptr; l = l->NextSiblingElement("nvlink")) {
      const char* target = l->Attribute("target");
      if (target == nullptr || *target == '\0') return Error(*l, "<nvlink> without target");
      Gpu::NvLink link;
      uint32_t tclass = 0;
      if (absl::Status s = IntAttr(*l, "count", &link.count); !s.ok()) return s;
      if (link.count < 1 || link.count > kMaxNvLinks) {
        return Error(*l, absl::StrCat("<nvlink> count=\"", link.count, "\", expected 1 to ", kMaxNvLinks));
      }
      if (absl::Status s = HexAttr(*l, "tclass", &tclass); !s.ok()) return s;
      link.target = (tclass >> 8) == kClassNvSwitch ? "nvswitch" : NormalizeBusId(target);
      // One entry per peer: NCCL lists each NVSwitch chip apart, the model
      // counts the links into the switch domain as one.
      auto same = std::find_if(g.nvlinks.begin(), g.nvlinks.end(),
                               [&](const Gpu::NvLink& n) { return n.target == link.target; });
      if (same != g.nvlinks.end()) {
        same->count += link.count;
      } else {
        g.nvlinks.push_back(std::move(link));
      }
    }
    if (!g.nvlinks.empty()) g.nvlink_gbps = NvLinkGbps(sm);
  }
  host_.gpus.push_back(std::move(g));
  return absl::OkStatus();
}

absl::Status Parser::AddNics(const XMLElement& owner, const XMLElement* nic, int node, int numa, LinkLayer layer) {
  Nic base;
  base.pci = node >= 0 ? host_.pci[node].busid : "";
  base.pci_node = node;
  base.numa = numa;
  base.link_layer = layer;
  const XMLElement* net = nic != nullptr ? nic->FirstChildElement("net") : nullptr;
  if (nic != nullptr) {
    if (absl::Status s = CheckChildren(*nic, {"net"}); !s.ok()) return s;
  }
  if (net == nullptr) {
    if (node < 0) return Error(owner, "<nic> outside any <pci> without <net>, expected <net name=...>");
    base.name = base.pci;  // PCI-tree-only files: the bus id is all there is
    host_.nics.push_back(std::move(base));
    return absl::OkStatus();
  }
  // Several <net> under one <nic>: the ports of one adapter.
  for (; net != nullptr; net = net->NextSiblingElement("net")) {
    Nic n = base;
    const char* name = net->Attribute("name");
    if (name == nullptr || *name == '\0') return Error(*net, "<net> without name");
    n.name = name;
    if (absl::Status s = IntAttr(*net, "port", &n.port); !s.ok()) return s;
    if (const char* speed = net->Attribute("speed"); speed != nullptr) {
      double mbps = 0;
      if (!absl::SimpleAtod(speed, &mbps) || !std::isfinite(mbps) || mbps < 0) {
        return Error(*net, absl::StrCat("<net> speed=\"", speed, "\", expected Mbit/s"));
      }
      n.gbps = mbps / 1000;
    }
    host_.nics.push_back(std::move(n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Host> ParseNcclTopoXml(absl::string_view text, absl::string_view origin) {
  return Parser(origin).Run(text);
}

}  // namespace trirace::topo
