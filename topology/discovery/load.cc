#include "topology/discovery/load.h"

#include <string>
#include <utility>

#include "topology/affinity.h"
#include "topology/discovery/hwloc.h"
#include "topology/discovery/json_spec.h"
#include "topology/discovery/nccl_xml.h"
#include "topology/discovery/spec_file.h"

namespace trirace::topo {

absl::StatusOr<System> LoadTopologyFile(const std::string& path, const std::string& host_key) {
  absl::StatusOr<std::string> text = ReadTopologyText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<TopologyFormat> format = DetectTopologyFormat(*text, path);
  if (!format.ok()) return format.status();
  System sys;
  if (*format == TopologyFormat::kJsonSpec) {
    absl::StatusOr<System> spec = ParseJsonSpec(*text, path);
    if (!spec.ok()) return spec.status();
    sys = *std::move(spec);
  } else {
    absl::StatusOr<Host> host =
        *format == TopologyFormat::kNcclXml ? ParseNcclTopoXml(*text, path) : ParseHwlocXml(*text, path);
    if (!host.ok()) return host.status();
    sys.hosts.push_back(*std::move(host));
    sys.hosts.back().key = host_key;
  }
  for (Host& h : sys.hosts) AssignNics(h);
  return sys;
}

}  // namespace trirace::topo
