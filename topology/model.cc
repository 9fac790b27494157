#include "topology/model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trirace::topo {

absl::string_view SourceName(Source s) {
  switch (s) {
    case Source::kUnknown:
      return "unknown";
    case Source::kJsonSpec:
      return "json-spec";
    case Source::kNcclXml:
      return "nccl-xml";
    case Source::kHwloc:
      return "hwloc";
    case Source::kSysfs:
      return "sysfs";
    case Source::kIbverbs:
      return "ibverbs";
    case Source::kNvml:
      return "nvml";
    case Source::kParam:
      return "param";
    case Source::kDefault:
      return "default";
  }
  return "unknown";
}

absl::string_view LinkLayerName(LinkLayer l) {
  switch (l) {
    case LinkLayer::kInfiniBand:
      return "ib";
    case LinkLayer::kEthernet:
      return "eth";
    case LinkLayer::kUnknown:
      break;
  }
  return "unknown";
}

absl::string_view FabricKindName(Fabric::Kind k) {
  switch (k) {
    case Fabric::Kind::kSingleSwitch:
      return "single_switch";
    case Fabric::Kind::kRailOptimized:
      return "rail_optimized";
    case Fabric::Kind::kTwoTier:
      return "two_tier";
  }
  return "single_switch";
}

std::string NormalizeBusId(absl::string_view busid) {
  std::string id = absl::AsciiStrToLower(absl::StripAsciiWhitespace(busid));
  // "bb:dd.f" has no domain: domain 0. A longer domain keeps its last 4 digits
  // when the rest are zeros (NCCL prints 4, some tools 8).
  const size_t colons = std::count(id.begin(), id.end(), ':');
  if (colons == 1) return absl::StrCat("0000:", id);
  const size_t first = id.find(':');
  if (colons == 2 && first > 4 && id.find_first_not_of('0') >= first - 4) return id.substr(first - 4);
  return id;
}

int Host::FindGpu(absl::string_view busid) const {
  const std::string id = NormalizeBusId(busid);
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].pci == id) return static_cast<int>(i);
  }
  return -1;
}

int Host::FindNic(absl::string_view name_or_busid) const {
  for (size_t i = 0; i < nics.size(); ++i) {
    if (nics[i].name == name_or_busid) return static_cast<int>(i);
  }
  const std::string id = NormalizeBusId(name_or_busid);
  for (size_t i = 0; i < nics.size(); ++i) {
    if (!nics[i].pci.empty() && nics[i].pci == id) return static_cast<int>(i);
  }
  return -1;
}

int Host::FindPci(absl::string_view busid) const {
  const std::string id = NormalizeBusId(busid);
  for (size_t i = 0; i < pci.size(); ++i) {
    if (pci[i].busid == id) return static_cast<int>(i);
  }
  return -1;
}

void Host::Note(absl::string_view fact, Source source) {
  for (Provenance& p : provenance) {
    if (p.fact == fact) {
      p.source = source;
      return;
    }
  }
  provenance.push_back({std::string(fact), source});
}

int System::FindHost(absl::string_view key) const {
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

bool LooksLikeBusId(absl::string_view id) {
  const auto hex = [](absl::string_view p) {
    return !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return absl::ascii_isxdigit(c); });
  };
  const std::vector<absl::string_view> parts = absl::StrSplit(id, ':');
  if (parts.size() != 3 || !hex(parts[0]) || !hex(parts[1])) return false;
  const std::vector<absl::string_view> devfn = absl::StrSplit(parts[2], '.');
  return devfn.size() == 2 && hex(devfn[0]) && hex(devfn[1]);
}

double PcieGbps(absl::string_view speed, absl::string_view width) {
  const absl::string_view text = absl::StripAsciiWhitespace(speed);
  const size_t unit = text.find("GT/s");
  double gts = 0;
  int lanes = 0;
  if (unit == absl::string_view::npos || !absl::SimpleAtod(text.substr(0, unit), &gts) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(width), &lanes) || !std::isfinite(gts) || gts <= 0 || lanes <= 0) {
    return 0;
  }
  const double encoding = gts >= 8 ? 128.0 / 130.0 : 8.0 / 10.0;
  return gts * encoding * lanes;
}

}  // namespace trirace::topo
