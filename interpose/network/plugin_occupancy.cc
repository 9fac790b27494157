#include "interpose/network/plugin_occupancy.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "interpose/network/front_stage.h"
#include "trirace/occupancy.h"
#include "trirace/trirace.h"

namespace trirace::interpose {
namespace {

// Send bytes in flight as P2P or SPARSE: the classes DENSE yields to; and
// as DENSE where this process's DENSE yields to the host's front stage's
// (rule [R14] without class priority on the wire, front_stage.h).
uint64_t UrgentSendInflight(const trirace_occ_counters_t* cls, bool dense_too) {
  return cls[TRIRACE_CLASS_P2P].send_inflight_bytes + cls[TRIRACE_CLASS_SPARSE].send_inflight_bytes +
         (dense_too ? cls[TRIRACE_CLASS_DENSE].send_inflight_bytes : 0);
}

class PluginOccupancyReader final : public OccupancyReader {
 public:
  PluginOccupancyReader(trirace_occ_reader_t* reader, const Clock* clock)
      : reader_(reader),
        clock_(clock),
        all_(std::make_unique<trirace_occ_snapshot_t>()),
        own_(std::make_unique<trirace_occ_snapshot_t>()) {}
  ~PluginOccupancyReader() override { trirace_occ_close(reader_); }
  PluginOccupancyReader(const PluginOccupancyReader&) = delete;
  PluginOccupancyReader& operator=(const PluginOccupancyReader&) = delete;

  std::string_view name() const override { return "plugin"; }

  // One pass over the process slots (the reader library's aggregation), so
  // the totals and this process's share come from the same slot copies.
  absl::StatusOr<OccupancySnapshot> Read() override {
    const int rc = trirace_occ_read_split(reader_, static_cast<int32_t>(getpid()), all_.get(), own_.get());
    if (rc == EAGAIN) {
      // A writer held its slot through the read's wait: a sum without it
      // would look like a drop in traffic, so this sample is skipped.
      return absl::UnavailableError("a process slot stayed mid-update; occupancy sample skipped");
    }
    if (rc != 0) return SystemError("reading the occupancy segment", rc);
    OccupancySnapshot out;
    out.time_ns = clock_->NowNs();
    // Without a slot of its own this process's traffic does not go through
    // the plugin: its share is unknown, not zero.
    const bool have_own = own_->num_procs > 0;
    const bool behind = DenseBehind();
    for (uint32_t k = 0; k < all_->num_nics; ++k) {
      const trirace_occ_nic_summary_t& nic = all_->nics[k];
      DeviceCounters c{.device = std::string(nic.name, strnlen(nic.name, sizeof nic.name)),
                              .tx_bytes = nic.total.send_completed_bytes,
                              .rx_bytes = nic.total.recv_completed_bytes,
                              .has_ours = have_own};
      uint64_t urgent = UrgentSendInflight(nic.cls, behind);
      for (uint32_t j = 0; have_own && j < own_->num_nics; ++j) {
        if (std::strncmp(own_->nics[j].name, nic.name, sizeof nic.name) != 0) continue;
        c.ours_tx_bytes = own_->nics[j].total.send_completed_bytes;
        c.ours_rx_bytes = own_->nics[j].total.recv_completed_bytes;
        // Both from the same slot copies, so ours is part of the total.
        urgent -= std::min(urgent, UrgentSendInflight(own_->nics[j].cls, behind));
      }
      // Without a slot of our own, none of our traffic is in the segment:
      // the whole gauge is the others'.
      c.others_urgent_send_bytes = static_cast<int64_t>(urgent);
      out.devices.push_back(std::move(c));
    }
    return out;
  }

 private:
  trirace_occ_reader_t* reader_;
  const Clock* clock_;
  std::unique_ptr<trirace_occ_snapshot_t> all_;
  std::unique_ptr<trirace_occ_snapshot_t> own_;
};

class WaitingPluginReader final : public OccupancyReader {
 public:
  WaitingPluginReader(std::unique_ptr<OccupancyReader> fallback, std::string job, const Clock* clock,
                      int64_t retry_ns)
      : fallback_(std::move(fallback)),
        job_(std::move(job)),
        clock_(clock),
        retry_ns_(retry_ns),
        warn_at_ns_(clock->NowNs() + kWarnAfterNs) {}

  std::string_view name() const override {
    if (plugin_ != nullptr) return plugin_->name();
    return fallback_ != nullptr ? fallback_->name() : "plugin (no segment yet)";
  }

  absl::StatusOr<OccupancySnapshot> Read() override {
    if (plugin_ == nullptr && !gave_up_ && clock_->NowNs() >= next_try_ns_) TryOpen();
    if (plugin_ != nullptr) {
      absl::StatusOr<OccupancySnapshot> snap = plugin_->Read();
      if (snap.ok()) {
        for (DeviceCounters& c : snap->devices) c.series = kSegmentSeries;
      }
      return snap;
    }
    if (fallback_ != nullptr) return fallback_->Read();
    if (gave_up_) return absl::FailedPreconditionError("the net plugin's occupancy segment cannot be read");
    return absl::UnavailableError("the net plugin has not published its occupancy segment yet");
  }

 private:
  // With no fallback, a segment still missing this long after the engine
  // started is worth a warning: the plugin is probably not NCCL's transport.
  static constexpr int64_t kWarnAfterNs = 10'000'000'000;
  // The segment's counters are not the fallback's: rates restart at the switch.
  static constexpr uint32_t kSegmentSeries = 1;

  void TryOpen() {
    next_try_ns_ = clock_->NowNs() + retry_ns_;
    absl::StatusOr<std::unique_ptr<OccupancyReader>> opened = OpenPluginOccupancyReader(job_, clock_);
    if (opened.ok()) {
      plugin_ = *std::move(opened);
      fallback_.reset();
      TRIRACE_INFO(SCHED, "link occupancy now from the net plugin's segment (per process and class)");
      return;
    }
    const std::string why(opened.status().message());
    if (!SegmentMayOpenLater(opened.status())) {
      // A segment that exists but cannot be read (another version, another
      // owner) will not get better by retrying.
      gave_up_ = true;
      TRIRACE_WARN(SCHED, "%s; link occupancy %s", why,
                   fallback_ != nullptr ? absl::StrCat("stays on ", std::string(fallback_->name())) : "is not sampled");
      return;
    }
    if (fallback_ == nullptr && !warned_missing_ && clock_->NowNs() >= warn_at_ns_) {
      warned_missing_ = true;
      TRIRACE_WARN(SCHED,
                   "%s after %d s (is the TriRace net plugin NCCL's transport? NCCL_NET_PLUGIN); "
                   "link occupancy is not sampled until it appears",
                   why, static_cast<int>(kWarnAfterNs / 1'000'000'000));
    }
  }

  std::unique_ptr<OccupancyReader> fallback_;
  std::unique_ptr<OccupancyReader> plugin_;
  std::string job_;
  const Clock* clock_;
  int64_t retry_ns_;
  int64_t warn_at_ns_;
  int64_t next_try_ns_ = 0;
  bool gave_up_ = false;
  bool warned_missing_ = false;
};

}  // namespace

std::unique_ptr<OccupancyReader> PluginOccupancyReaderOnceItOpens(std::unique_ptr<OccupancyReader> fallback,
                                                                  const std::string& job, const Clock* clock,
                                                                  int64_t retry_ns) {
  return std::make_unique<WaitingPluginReader>(std::move(fallback), job, clock, retry_ns);
}

bool SegmentMayOpenLater(const absl::Status& open_error) {
  return absl::IsNotFound(open_error) || absl::IsUnavailable(open_error);
}

absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenPluginOccupancyReader(const std::string& job,
                                                                          const Clock* clock) {
  trirace_occ_reader_t* reader = nullptr;
  const int rc = trirace_occ_open(job.empty() ? nullptr : job.c_str(), &reader);
  if (rc != 0) {
    const std::string what = absl::StrCat("net plugin occupancy segment for job '", job.empty() ? "(default)" : job,
                                          "': ", std::strerror(rc));
    switch (rc) {
      case ENOENT:
        return absl::NotFoundError(what);
      case EPROTO:  // another layout or ABI version
        return absl::FailedPreconditionError(what);
      case EPERM:
      case EACCES:  // another user's segment
        return absl::PermissionDeniedError(what);
      default:  // out of descriptors or memory, a failed map: may pass
        return absl::UnavailableError(what);
    }
  }
  return std::make_unique<PluginOccupancyReader>(reader, clock);
}

}  // namespace trirace::interpose
