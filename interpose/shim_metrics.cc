// The shim's side of TRIRACE_METRICS_FILE (interpose/metrics/): starting the
// writer and the snapshot it writes.
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "interpose/network/plugin_occupancy.h"
#include "interpose/shim.h"

namespace trirace::interpose {
namespace {

// The job's NIC counters from the net plugin's segment, through the
// writer's own reader (a reader serves one thread): it opens once the plugin
// publishes, and the last counters read stay in the file after the segment
// is gone (the plugin closes before the exit's last write).
class LinkSource {
 public:
  LinkSource() : reader_(PluginOccupancyReaderOnceItOpens(nullptr)) {}
  void Fill(MetricsSnapshot* s) {
    if (reader_ != nullptr) {
      absl::StatusOr<OccupancySnapshot> read = reader_->Read();
      if (read.ok() && !read->devices.empty()) {
        last_.clear();
        for (const DeviceCounters& d : read->devices) {
          last_.push_back({d.device, d.tx_bytes, d.rx_bytes, d.others_urgent_send_bytes});
        }
      }
    }
    s->links = last_;
  }

 private:
  std::unique_ptr<OccupancyReader> reader_;
  std::vector<LinkMetrics> last_;
};

}  // namespace

void Shim::StartMetrics() {
  const std::string& path = ParamString(ParamId::kMetricsFile);
  if (path.empty()) return;
  MetricsFile::Options options;
  options.path_pattern = path;
  options.period = absl::Seconds(ParamDouble(ParamId::kMetricsPeriodS));
  options.snapshot = [this, links = std::make_shared<LinkSource>()] {
    MetricsSnapshot s = MetricsNow();
    links->Fill(&s);
    return s;
  };
  options.rank = [this]() -> std::optional<int> {
    const int rank = registry_.first_rank();
    return rank >= 0 ? std::optional<int>(rank) : std::nullopt;
  };
  absl::StatusOr<std::unique_ptr<MetricsFile>> metrics = MetricsFile::Start(std::move(options));
  if (!metrics.ok()) {
    TRIRACE_WARN(INTERPOSE, "TRIRACE_METRICS_FILE=\"%s\": %s; no metrics are written", path,
                 metrics.status().message());
    return;
  }
  metrics_ = *std::move(metrics);
}

MetricsSnapshot Shim::MetricsNow() const {
  MetricsSnapshot s;
  s.mode = std::string(kShimModeTexts[static_cast<int>(mode_)]);
  if (mode_ == ShimMode::kSchedule) s.policy = std::string(kPolicyKindTexts[static_cast<int>(verdict_.policy)]);
  if (verdict_.mode != verdict_.requested) s.schedule_fallback = verdict_.why;
  {
    absl::MutexLock lock(&disable_mutex_);
    s.passthrough_reason = disable_reason_;
  }
  registry_.ForEach([&s](CommState& state) {
    CommMetrics c;
    c.index = state.index;
    c.role = std::string(RoleName(EffectiveRole(state, nullptr)));
    for (int k = 0; k < kNumTrafficClasses; ++k) {
      c.ops[size_t(k)] = state.stats.class_ops[size_t(k)].load(std::memory_order_relaxed);
      c.bytes[size_t(k)] = state.stats.class_bytes[size_t(k)].load(std::memory_order_relaxed);
    }
    s.comms.push_back(std::move(c));
  });
  gate_counters_.Fill(&s);
  return s;
}

}  // namespace trirace::interpose
