#include "scheduler/sysfs_occupancy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace trirace::sched {
namespace {

// An open counter file, closed on destruction.
class CounterFile {
 public:
  CounterFile() = default;
  explicit CounterFile(int fd) : fd_(fd) {}
  CounterFile(CounterFile&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  CounterFile& operator=(CounterFile&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~CounterFile() { Reset(); }

  static absl::StatusOr<CounterFile> Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SystemError(absl::StrCat("open ", path), errno);
    return CounterFile(fd);
  }

  // The decimal value in the file, read from offset 0.
  absl::StatusOr<uint64_t> Read(const std::string& path) const {
    char buf[32];
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    if (n < 0) return SystemError(absl::StrCat("read ", path), errno);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(buf, buf + n, v);
    if (ec != std::errc() || end == buf) {
      return absl::DataLossError(absl::StrCat(path, ": not a byte counter: '",
                                              absl::string_view(buf, static_cast<size_t>(n)), "'"));
    }
    return v;
  }

 private:
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

class SysfsOccupancyReader final : public OccupancyReader {
 public:
  struct Device {
    std::string name;
    std::string tx_path, rx_path;
    CounterFile tx, rx;
  };
  SysfsOccupancyReader(std::vector<Device> devices, const Clock* clock)
      : devices_(std::move(devices)), clock_(clock) {}

  std::string_view name() const override { return "sysfs"; }

  absl::StatusOr<OccupancySnapshot> Read() override {
    OccupancySnapshot snap;
    snap.time_ns = clock_->NowNs();
    snap.devices.reserve(devices_.size());
    for (const Device& d : devices_) {
      absl::StatusOr<uint64_t> tx = d.tx.Read(d.tx_path);
      if (!tx.ok()) return tx.status();
      absl::StatusOr<uint64_t> rx = d.rx.Read(d.rx_path);
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

absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenSysfsOccupancyReader(
    const std::vector<std::string>& interfaces, const std::string& root, const Clock* clock) {
  if (interfaces.empty()) {
    return absl::InvalidArgumentError("sysfs occupancy reader: no interface given (set TRIRACE_NIC)");
  }
  std::vector<SysfsOccupancyReader::Device> devices;
  for (const std::string& name : interfaces) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return absl::InvalidArgumentError(absl::StrCat("TRIRACE_NIC: '", name, "' is not an interface name"));
    }
    SysfsOccupancyReader::Device d;
    d.name = name;
    d.tx_path = absl::StrCat(root, "/", name, "/statistics/tx_bytes");
    d.rx_path = absl::StrCat(root, "/", name, "/statistics/rx_bytes");
    absl::StatusOr<CounterFile> tx = CounterFile::Open(d.tx_path);
    if (!tx.ok()) return tx.status();
    absl::StatusOr<CounterFile> rx = CounterFile::Open(d.rx_path);
    if (!rx.ok()) return rx.status();
    d.tx = std::move(*tx);
    d.rx = std::move(*rx);
    devices.push_back(std::move(d));
  }
  return std::make_unique<SysfsOccupancyReader>(std::move(devices), clock);
}

}  // namespace trirace::sched
