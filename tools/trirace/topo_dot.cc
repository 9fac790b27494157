#include "topo_dot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

extern char** environ;

namespace trirace::tools {
namespace {

std::string Quote(const std::string& s) { return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\\\""}}), "\""); }

std::string Rate(double gbps) { return gbps > 0 ? absl::StrFormat("%g Gbit/s", gbps) : "? Gbit/s"; }

std::string Id(size_t host, const char* kind, size_t index) { return absl::StrCat("h", host, "_", kind, index); }

}  // namespace

std::string TopologyDot(const topo::System& sys) {
  std::string out = "graph topology {\n  rankdir=TB; node [fontname=\"Helvetica\", fontsize=10];\n";
  absl::StrAppend(&out, "  edge [fontname=\"Helvetica\", fontsize=8];\n");
  int rails = 0;
  for (size_t h = 0; h < sys.hosts.size(); ++h) {
    const topo::Host& host = sys.hosts[h];
    absl::StrAppend(&out, "  subgraph cluster_", h, " {\n    label=", Quote("host " + host.key), ";\n");
    for (int n = 0; n < host.numa_nodes; ++n) {
      absl::StrAppend(&out, "    ", Id(h, "numa", n), " [shape=box, style=filled, fillcolor=\"#dddddd\", label=",
                      Quote(absl::StrCat("CPU / NUMA ", n)), "];\n");
    }
    const auto parent_of = [&](int parent, int numa) {
      return parent >= 0 ? Id(h, "pci", parent) : Id(h, "numa", numa >= 0 ? numa : 0);
    };
    for (size_t i = 0; i < host.pci.size(); ++i) {
      const topo::PciNode& p = host.pci[i];
      bool endpoint = false;
      for (const topo::Gpu& g : host.gpus) endpoint = endpoint || g.pci_node == static_cast<int>(i);
      for (const topo::Nic& n : host.nics) endpoint = endpoint || n.pci_node == static_cast<int>(i);
      if (endpoint) continue;  // drawn as the GPU / NIC itself
      absl::StrAppend(&out, "    ", Id(h, "pci", i), " [shape=box, label=",
                      Quote(absl::StrCat(p.is_switch ? "switch " : "pci ", p.busid)), "];\n");
      absl::StrAppend(&out, "    ", parent_of(p.parent, p.numa), " -- ", Id(h, "pci", i), " [label=",
                      Quote(p.link_gbps > 0 ? Rate(p.link_gbps) : ""), "];\n");
    }
    // A GPU or NIC hangs off its PCI node's parent (the node is itself).
    const auto attach = [&](int node, int numa) {
      if (node < 0 || node >= static_cast<int>(host.pci.size())) return parent_of(-1, numa);
      return parent_of(host.pci[node].parent, host.pci[node].numa);
    };
    // The rate of an endpoint's PCIe link, "" when unknown.
    const auto UpLink = [&](int node) -> std::string {
      if (node < 0 || node >= static_cast<int>(host.pci.size()) || host.pci[node].link_gbps <= 0) return "";
      return Rate(host.pci[node].link_gbps);
    };
    for (size_t i = 0; i < host.gpus.size(); ++i) {
      const topo::Gpu& g = host.gpus[i];
      absl::StrAppend(&out, "    ", Id(h, "gpu", i), " [shape=box, style=filled, fillcolor=\"#b7e1a1\", label=",
                      Quote(absl::StrCat("GPU ", i, "\\n", g.pci)), "];\n");
      absl::StrAppend(&out, "    ", attach(g.pci_node, g.numa), " -- ", Id(h, "gpu", i), " [label=",
                      Quote(UpLink(g.pci_node)), "];\n");
    }
    for (size_t i = 0; i < host.nics.size(); ++i) {
      const topo::Nic& n = host.nics[i];
      rails = std::max(rails, n.rail + 1);
      absl::StrAppend(&out, "    ", Id(h, "nic", i), " [shape=box, style=filled, fillcolor=\"#a9c9f0\", label=",
                      Quote(absl::StrCat(n.name, "\\nrail ", n.rail, ", ", Rate(n.gbps))), "];\n");
      absl::StrAppend(&out, "    ", attach(n.pci_node, n.numa), " -- ", Id(h, "nic", i), " [label=",
                      Quote(UpLink(n.pci_node)), "];\n");
    }
    for (size_t i = 0; i < host.gpus.size(); ++i) {
      if (host.gpus[i].nic < 0) continue;
      absl::StrAppend(&out, "    ", Id(h, "gpu", i), " -- ", Id(h, "nic", host.gpus[i].nic),
                      " [style=dashed, color=\"#555555\", constraint=false];\n");
    }
    absl::StrAppend(&out, "  }\n");
  }
  const bool railed = sys.fabric.kind == topo::Fabric::Kind::kRailOptimized && rails > 0;
  const int leaves = railed ? rails : 1;
  for (int l = 0; l < leaves; ++l) {
    absl::StrAppend(&out, "  leaf", l, " [shape=octagon, label=",
                    Quote(railed ? absl::StrCat("rail ", l, " leaf") : "switch"), "];\n");
  }
  for (size_t h = 0; h < sys.hosts.size(); ++h) {
    for (size_t i = 0; i < sys.hosts[h].nics.size(); ++i) {
      const int rail = sys.hosts[h].nics[i].rail;
      absl::StrAppend(&out, "  ", Id(h, "nic", i), " -- leaf", railed && rail >= 0 ? rail : 0, ";\n");
    }
  }
  absl::StrAppend(&out, "}\n");
  return out;
}

absl::Status RenderPng(const std::string& dot, const std::string& path) {
  char tmpl[] = "/tmp/trirace-topo-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return absl::InternalError(absl::StrCat("mkstemp: ", std::strerror(errno)));
  const std::string input = tmpl;
  {
    std::ofstream f(input);
    f << dot;
  }
  close(fd);
  std::vector<std::string> args = {"dot", "-Tpng", "-o", path, input};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) {
    unlink(input.c_str());
    if (spawned == ENOENT) {
      return absl::FailedPreconditionError("--png needs Graphviz's dot program (Debian package graphviz)");
    }
    return absl::InternalError(absl::StrCat("cannot run dot: ", std::strerror(spawned)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  unlink(input.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("dot failed writing ", path, " (exit status ",
                                            WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")"));
  }
  return absl::OkStatus();
}

}  // namespace trirace::tools
