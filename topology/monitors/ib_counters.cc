#include "topology/monitors/ib_counters.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/monitors/counter_file.h"

namespace trirace::topo {
namespace {

// PortXmitData / PortRcvData count 32-bit words.
constexpr uint64_t kBytesPerUnit = 4;

class IbCountersReader final : public OccupancyReader {
 public:
  struct Port {
    std::string name;
    CounterFile xmit, rcv;
  };
  IbCountersReader(std::vector<Port> ports, const Clock* clock) : ports_(std::move(ports)), clock_(clock) {}

  std::string_view name() const override { return "infiniband"; }

  absl::StatusOr<OccupancySnapshot> Read() override {
    OccupancySnapshot snap;
    snap.time_ns = clock_->NowNs();
    snap.devices.reserve(ports_.size());
    for (const Port& p : ports_) {
      absl::StatusOr<uint64_t> xmit = p.xmit.Read();
      if (!xmit.ok()) return xmit.status();
      absl::StatusOr<uint64_t> rcv = p.rcv.Read();
      if (!rcv.ok()) return rcv.status();
      snap.devices.push_back({.device = p.name, .tx_bytes = *xmit * kBytesPerUnit, .rx_bytes = *rcv * kBytesPerUnit});
    }
    return snap;
  }

 private:
  std::vector<Port> ports_;
  const Clock* clock_;
};

bool BadName(const std::string& name) {
  return name.empty() || name.find('/') != std::string::npos || name == "." || name == "..";
}

}  // namespace

std::string IbPortName(const IbPort& port) {
  return port.port == 1 ? port.device : absl::StrCat(port.device, ":", port.port);
}

absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenIbCountersReader(const std::vector<IbPort>& ports,
                                                                      const std::string& root, const Clock* clock) {
  if (ports.empty()) return absl::InvalidArgumentError("InfiniBand occupancy reader: no port given");
  std::vector<IbCountersReader::Port> open;
  for (const IbPort& p : ports) {
    if (BadName(p.device) || p.port < 1) {
      return absl::InvalidArgumentError(absl::StrCat("'", p.device, "' port ", p.port, " is not an RDMA port"));
    }
    const std::string dir = absl::StrCat(root, "/", p.device, "/ports/", p.port, "/counters/");
    absl::StatusOr<CounterFile> xmit = CounterFile::Open(dir + "port_xmit_data");
    if (!xmit.ok()) return xmit.status();
    absl::StatusOr<CounterFile> rcv = CounterFile::Open(dir + "port_rcv_data");
    if (!rcv.ok()) return rcv.status();
    open.push_back({p.name.empty() ? IbPortName(p) : p.name, *std::move(xmit), *std::move(rcv)});
  }
  return std::make_unique<IbCountersReader>(std::move(open), clock);
}

}  // namespace trirace::topo
