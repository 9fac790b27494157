#include "interpose/plugin_occupancy.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "trirace/occupancy.h"

namespace trirace::interpose {
namespace {

void AddCounters(const trirace_occ_nic_t& nic, uint64_t* tx, uint64_t* rx) {
  for (const trirace_occ_counters_t& cls : nic.cls) {
    *tx += cls.send_completed_bytes;
    *rx += cls.recv_completed_bytes;
  }
}

class PluginOccupancyReader final : public sched::OccupancyReader {
 public:
  PluginOccupancyReader(trirace_occ_reader_t* reader, const Clock* clock)
      : reader_(reader), clock_(clock), proc_(std::make_unique<trirace_occ_proc_t>()) {}
  ~PluginOccupancyReader() override { trirace_occ_close(reader_); }
  PluginOccupancyReader(const PluginOccupancyReader&) = delete;
  PluginOccupancyReader& operator=(const PluginOccupancyReader&) = delete;

  std::string_view name() const override { return "plugin"; }

  // One pass over the process slots, each copied once under its sequence
  // lock, so the totals and this process's share come from the same copies.
  absl::StatusOr<sched::OccupancySnapshot> Read() override {
    sched::OccupancySnapshot out;
    out.time_ns = clock_->NowNs();
    const int32_t self = static_cast<int32_t>(getpid());
    bool have_own = false;
    for (uint32_t i = 0; i < TRIRACE_OCC_MAX_PROCS; ++i) {
      const int rc = trirace_occ_read_proc(reader_, i, proc_.get());
      if (rc == EAGAIN) {
        // A writer held its slot through the read's wait: a sum without it
        // would look like a drop in traffic, so this sample is skipped.
        return absl::UnavailableError(
            absl::StrCat("process slot ", i, " stayed mid-update; occupancy sample skipped"));
      }
      if (rc != 0) continue;  // free or dead
      const bool own = proc_->owner_pid == self;
      have_own |= own;
      for (uint32_t n = 0; n < proc_->num_nics && n < TRIRACE_OCC_MAX_NICS; ++n) {
        const trirace_occ_nic_t& nic = proc_->nics[n];
        const std::string name(nic.name, strnlen(nic.name, sizeof nic.name));
        sched::DeviceCounters* c = nullptr;
        for (sched::DeviceCounters& d : out.devices) {
          if (d.device == name) c = &d;
        }
        if (c == nullptr) {
          out.devices.push_back({.device = name});
          c = &out.devices.back();
        }
        AddCounters(nic, &c->tx_bytes, &c->rx_bytes);
        if (own) AddCounters(nic, &c->ours_tx_bytes, &c->ours_rx_bytes);
      }
    }
    // Without a slot of its own this process's traffic does not go through
    // the plugin: its share is unknown, not zero.
    for (sched::DeviceCounters& d : out.devices) {
      d.has_ours = have_own;
      if (!have_own) d.ours_tx_bytes = d.ours_rx_bytes = 0;
    }
    return out;
  }

 private:
  trirace_occ_reader_t* reader_;
  const Clock* clock_;
  std::unique_ptr<trirace_occ_proc_t> proc_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<sched::OccupancyReader>> OpenPluginOccupancyReader(const std::string& job,
                                                                          const Clock* clock) {
  trirace_occ_reader_t* reader = nullptr;
  const int rc = trirace_occ_open(job.empty() ? nullptr : job.c_str(), &reader);
  if (rc != 0) {
    const std::string what = absl::StrCat("net plugin occupancy segment for job '", job.empty() ? "(default)" : job,
                                          "': ", std::strerror(rc));
    return rc == ENOENT ? absl::NotFoundError(what) : absl::UnknownError(what);
  }
  return std::make_unique<PluginOccupancyReader>(reader, clock);
}

}  // namespace trirace::interpose
