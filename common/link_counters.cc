#include "common/link_counters.h"

#include <utility>

#include "common/logging.h"

namespace trirace {
namespace {

class CombinedReader final : public OccupancyReader {
 public:
  explicit CombinedReader(std::vector<std::unique_ptr<OccupancyReader>> parts)
      : parts_(std::move(parts)), warned_(parts_.size(), false) {}

  // Built when asked (warnings only), as a part may change source
  // (plugin_occupancy.h); valid until the next call.
  std::string_view name() const override {
    name_.clear();
    for (const auto& p : parts_) name_ += (name_.empty() ? "" : "+") + std::string(p->name());
    return name_;
  }

  absl::StatusOr<OccupancySnapshot> Read() override {
    OccupancySnapshot snap;
    absl::Status first_error;
    bool any = false;
    for (size_t i = 0; i < parts_.size(); ++i) {
      absl::StatusOr<OccupancySnapshot> s = parts_[i]->Read();
      if (!s.ok()) {
        if (first_error.ok()) first_error = s.status();
        if (!absl::IsUnavailable(s.status()) && !warned_[i]) {
          warned_[i] = true;
          TRIRACE_WARN(SCHED, "occupancy reader %s: %s (its devices are left out until it recovers)",
                       std::string(parts_[i]->name()), s.status().ToString());
        }
        continue;
      }
      if (!any) snap.time_ns = s->time_ns;
      any = true;
      for (DeviceCounters& d : s->devices) snap.devices.push_back(std::move(d));
    }
    if (!any) return first_error;
    return snap;
  }

 private:
  std::vector<std::unique_ptr<OccupancyReader>> parts_;
  std::vector<bool> warned_;
  mutable std::string name_;
};

}  // namespace

std::unique_ptr<OccupancyReader> CombineReaders(std::vector<std::unique_ptr<OccupancyReader>> parts) {
  std::vector<std::unique_ptr<OccupancyReader>> kept;
  for (auto& p : parts) {
    if (p != nullptr) kept.push_back(std::move(p));
  }
  if (kept.size() == 1) return std::move(kept.front());
  if (kept.empty()) return nullptr;
  return std::make_unique<CombinedReader>(std::move(kept));
}

}  // namespace trirace
