#include "topology/monitors/net_stats.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/monitors/counter_file.h"

namespace trirace::topo {
namespace {

class NetStatsReader final : public OccupancyReader {
 public:
  struct Device {
    std::string name;
    CounterFile tx, rx;
  };
  NetStatsReader(std::vector<Device> devices, const Clock* clock) : devices_(std::move(devices)), clock_(clock) {}

  std::string_view name() const override { return "sysfs"; }

  absl::StatusOr<OccupancySnapshot> Read() override {
    OccupancySnapshot snap;
    snap.time_ns = clock_->NowNs();
    snap.devices.reserve(devices_.size());
    for (const Device& d : devices_) {
      absl::StatusOr<uint64_t> tx = d.tx.Read();
      if (!tx.ok()) return tx.status();
      absl::StatusOr<uint64_t> rx = d.rx.Read();
      if (!rx.ok()) return rx.status();
      snap.devices.push_back({.device = d.name, .tx_bytes = *tx, .rx_bytes = *rx});
    }
    return snap;
  }

 private:
  std::vector<Device> devices_;
  const Clock* clock_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenNetStatsReader(const std::vector<std::string>& interfaces,
                                                                    const std::string& root, const Clock* clock) {
  if (interfaces.empty()) {
    return absl::InvalidArgumentError("sysfs occupancy reader: no interface given (set TRIRACE_NIC)");
  }
  std::vector<NetStatsReader::Device> devices;
  for (const std::string& name : interfaces) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return absl::InvalidArgumentError(absl::StrCat("TRIRACE_NIC: '", name, "' is not an interface name"));
    }
    absl::StatusOr<CounterFile> tx = CounterFile::Open(absl::StrCat(root, "/", name, "/statistics/tx_bytes"));
    if (!tx.ok()) return tx.status();
    absl::StatusOr<CounterFile> rx = CounterFile::Open(absl::StrCat(root, "/", name, "/statistics/rx_bytes"));
    if (!rx.ok()) return rx.status();
    devices.push_back({name, *std::move(tx), *std::move(rx)});
  }
  return std::make_unique<NetStatsReader>(std::move(devices), clock);
}

}  // namespace trirace::topo
