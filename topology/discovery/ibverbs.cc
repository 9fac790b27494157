#include "topology/discovery/ibverbs.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/discovery/sysfs.h"

#if TRIRACE_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace trirace::topo {
namespace {

// IB speed codes (ibv_port_attr::active_speed) and their lane rates in
// Gbit/s, as the InfiniBand specification names them.
struct SpeedRate {
  int code;
  double lane_gbps;
};
constexpr SpeedRate kSpeeds[] = {
    {1, 2.5},    // SDR
    {2, 5},      // DDR
    {4, 10},     // QDR
    {8, 10},     // FDR10
    {16, 14},    // FDR
    {32, 25},    // EDR
    {64, 50},    // HDR
    {128, 100},  // NDR
};

// IB width codes (active_width) and their lane counts.
struct WidthLanes {
  int code;
  int lanes;
};
constexpr WidthLanes kWidths[] = {{1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}};

}  // namespace

double IbPortGbps(int active_speed, int active_width) {
  double lane = 0;
  int lanes = 0;
  for (const SpeedRate& s : kSpeeds) {
    if (s.code == active_speed) lane = s.lane_gbps;
  }
  for (const WidthLanes& w : kWidths) {
    if (w.code == active_width) lanes = w.lanes;
  }
  return lane * lanes;
}

std::string IbPortStateName(int state) {
  static constexpr const char* kNames[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  if (state >= 0 && state < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[state];
  return absl::StrCat("state ", state);
}

void AddIbverbsFacts(const std::vector<IbverbsPort>& ports, Host& host) {
  bool added_rates = false, added_nics = false;
  for (const IbverbsPort& p : ports) {
    int found = -1;
    bool device_known = false;
    for (size_t i = 0; i < host.nics.size(); ++i) {
      if (host.nics[i].name != p.device) continue;
      device_known = true;
      if (host.nics[i].port == p.port) found = static_cast<int>(i);
    }
    if (found >= 0) {
      Nic& n = host.nics[found];
      if (n.gbps <= 0 && p.gbps > 0) {
        n.gbps = p.gbps;
        added_rates = true;
      }
      if (n.link_layer == LinkLayer::kUnknown) n.link_layer = p.link_layer;
    } else if (!device_known && p.active) {
      Nic n;
      n.name = p.device;
      n.port = p.port;
      n.link_layer = p.link_layer;
      n.gbps = p.gbps;
      added_rates = added_rates || n.gbps > 0;
      host.nics.push_back(std::move(n));
      added_nics = true;
    }
  }
  if (added_nics) NoteFirst(host, "nics", Source::kIbverbs);
  if (added_rates) NoteFirst(host, "nic rates", Source::kIbverbs);
}

#if !TRIRACE_HAVE_IBVERBS

IbverbsDiscovery DiscoverIbverbs(absl::string_view) {
  IbverbsDiscovery d;
  d.notes.push_back("ibverbs: built without the libibverbs headers (libibverbs-dev)");
  return d;
}

#else  // TRIRACE_HAVE_IBVERBS

namespace {

struct DlClose {
  void operator()(void* handle) const { dlclose(handle); }
};
using LibraryHandle = std::unique_ptr<void, DlClose>;

// The library's entry points. ibv_query_port is a static inline in the
// header (it calls the context's query_port op, falling back to the
// exported ibv_query_port with the older, shorter attribute struct): the
// exported symbol is the fallback only.
struct Verbs {
  decltype(&::ibv_get_device_list) get_device_list = nullptr;
  decltype(&::ibv_free_device_list) free_device_list = nullptr;
  decltype(&::ibv_get_device_name) get_device_name = nullptr;
  decltype(&::ibv_open_device) open_device = nullptr;
  decltype(&::ibv_close_device) close_device = nullptr;
  decltype(&::ibv_query_device) query_device = nullptr;
  int (*compat_query_port)(ibv_context*, uint8_t, _compat_ibv_port_attr*) = nullptr;

  // Resolves every entry point; the name of the first missing one, or "".
  std::string Resolve(void* lib) {
    const auto sym = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      return fn != nullptr;
    };
    if (!sym(get_device_list, "ibv_get_device_list")) return "ibv_get_device_list";
    if (!sym(free_device_list, "ibv_free_device_list")) return "ibv_free_device_list";
    if (!sym(get_device_name, "ibv_get_device_name")) return "ibv_get_device_name";
    if (!sym(open_device, "ibv_open_device")) return "ibv_open_device";
    if (!sym(close_device, "ibv_close_device")) return "ibv_close_device";
    if (!sym(query_device, "ibv_query_device")) return "ibv_query_device";
    if (!sym(compat_query_port, "ibv_query_port")) return "ibv_query_port";
    return "";
  }

  // The header's ibv_query_port, without a link-time reference to the
  // library: the context's op where the provider has one, else the export.
  int QueryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) const {
    std::memset(attr, 0, sizeof(*attr));
    if (verbs_context* vctx = verbs_get_ctx_op(ctx, query_port)) {
      return vctx->query_port(ctx, port, attr, sizeof(*attr));
    }
    return compat_query_port(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
  }
};

// The device list and the contexts opened from it, released in reverse.
class DeviceList {
 public:
  DeviceList(const Verbs& verbs, ibv_device** list) : verbs_(verbs), list_(list) {}
  ~DeviceList() {
    if (list_ != nullptr) verbs_.free_device_list(list_);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;

 private:
  const Verbs& verbs_;
  ibv_device** list_;
};

class Context {
 public:
  Context(const Verbs& verbs, ibv_context* ctx) : verbs_(verbs), ctx_(ctx) {}
  ~Context() {
    if (ctx_ != nullptr) verbs_.close_device(ctx_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ibv_context* get() const { return ctx_; }

 private:
  const Verbs& verbs_;
  ibv_context* ctx_;
};

LinkLayer FromVerbs(uint8_t link_layer) {
  switch (link_layer) {
    case IBV_LINK_LAYER_INFINIBAND:
      return LinkLayer::kInfiniBand;
    case IBV_LINK_LAYER_ETHERNET:
      return LinkLayer::kEthernet;
    default:
      return LinkLayer::kUnknown;
  }
}

// The ports of one device; failures as notes.
void QueryDevice(const Verbs& verbs, ibv_device* dev, IbverbsDiscovery& d) {
  const char* raw_name = verbs.get_device_name(dev);
  const std::string name = raw_name != nullptr ? raw_name : "?";
  errno = 0;
  const Context ctx(verbs, verbs.open_device(dev));
  if (ctx.get() == nullptr) {
    d.notes.push_back(absl::StrCat("ibverbs: ", name, ": cannot open the device (",
                                   errno != 0 ? std::strerror(errno) : "no reason given", ")"));
    return;
  }
  ibv_device_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  if (const int rc = verbs.query_device(ctx.get(), &attr); rc != 0) {
    d.notes.push_back(absl::StrCat("ibverbs: ", name, ": ibv_query_device failed (", std::strerror(rc), ")"));
    return;
  }
  for (int port = 1; port <= attr.phys_port_cnt; ++port) {
    ibv_port_attr pa;
    if (const int rc = verbs.QueryPort(ctx.get(), static_cast<uint8_t>(port), &pa); rc != 0) {
      d.notes.push_back(absl::StrCat("ibverbs: ", name, " port ", port, ": ibv_query_port failed (",
                                     std::strerror(rc), ")"));
      continue;
    }
    IbverbsPort p;
    p.device = name;
    p.port = port;
    p.state = static_cast<int>(pa.state);
    p.active = pa.state == IBV_PORT_ACTIVE || pa.state == IBV_PORT_ACTIVE_DEFER;
    p.active_speed = pa.active_speed;
    p.active_width = pa.active_width;
    p.gbps = IbPortGbps(p.active_speed, p.active_width);
    p.link_layer = FromVerbs(pa.link_layer);
    d.ports.push_back(std::move(p));
  }
}

}  // namespace

IbverbsDiscovery DiscoverIbverbs(absl::string_view library_name) {
  IbverbsDiscovery d;
  const std::string library(library_name);
  const LibraryHandle lib(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (lib == nullptr) {
    d.notes.push_back(absl::StrCat("ibverbs: ", library, " not found"));
    return d;
  }
  Verbs verbs;
  if (const std::string missing = verbs.Resolve(lib.get()); !missing.empty()) {
    d.notes.push_back(absl::StrCat("ibverbs: ", library, " has no ", missing));
    return d;
  }
  int count = 0;
  errno = 0;
  ibv_device** list = verbs.get_device_list(&count);
  const DeviceList devices(verbs, list);
  if (list == nullptr) {
    d.notes.push_back(absl::StrCat("ibverbs: no RDMA device (ibv_get_device_list: ",
                                   errno != 0 ? std::strerror(errno) : "failed", ")"));
    return d;
  }
  if (count <= 0) {
    d.notes.push_back("ibverbs: no RDMA device");
    return d;
  }
  for (int i = 0; i < count && list[i] != nullptr; ++i) QueryDevice(verbs, list[i], d);
  return d;
}

#endif  // TRIRACE_HAVE_IBVERBS

}  // namespace trirace::topo
