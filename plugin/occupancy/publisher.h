// The occupancy publisher: per-NIC byte and request counters, updated on the
// data path with relaxed atomics (no lock), copied by a background thread
// every TRIRACE_NET_PUBLISH_US into this process's slot of the host's
// occupancy segment (include/trirace/occupancy.h) under the slot's sequence
// lock, so readers never see torn records.
//
// Usage (the plugin core):
//   OccupancyPublisher pub;
//   pub.Start({{"eth0", 100000}, {"lo", 10000}});   // once, after device discovery
//   pub.SendPosted(nic, cls, bytes);  ...  pub.SendCompleted(nic, cls, bytes, done_bytes);
// `nic` is the device index (devices past TRIRACE_OCC_MAX_NICS are not
// published), `cls` 0..TRIRACE_OCC_NUM_CLASSES-1.
//
// The counters work even when the segment cannot be used (another user's
// segment, a different layout version, all slots taken): the publisher warns
// once and keeps counting locally (Local()). Stop() (or destruction) frees
// the slot: the process's bytes leave the host totals, as for a process
// that died. The last live process of the job on the host to stop removes
// the segment (shm_unlink); slots of dead processes do not count and are
// freed by the next process that joins. Joining and leaving hold
// flock(LOCK_EX) on the segment, so a process that joins while the last one
// leaves either finds its slot in the old segment before the removal or
// creates a new segment after it.
//
// Thread safety: the counter methods are thread-safe and lock-free; Start
// and Stop must not race with each other. mu_ guards stop_ and the NIC
// table nics_: AddNic appends under it, and the record writer (the
// publisher thread, and ClaimSlot before that thread starts) reads under
// it. num_nics_ is an atomic so that the counter methods check a NIC index
// without the lock. The segment fields (map_, fd_, name_, slot_,
// period_us_, thread_) belong to Start and Stop; the publisher thread only
// uses them between the two (created after Start set them, joined before
// Stop clears them).
#ifndef TRIRACE_PLUGIN_OCCUPANCY_PUBLISHER_H_
#define TRIRACE_PLUGIN_OCCUPANCY_PUBLISHER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "trirace/occupancy.h"

namespace trirace::occupancy {

class OccupancyPublisher {
 public:
  struct NicInfo {
    std::string name;
    uint32_t speed_mbps = 0;
  };

  OccupancyPublisher();
  ~OccupancyPublisher();
  OccupancyPublisher(const OccupancyPublisher&) = delete;
  OccupancyPublisher& operator=(const OccupancyPublisher&) = delete;

  // Attaches to (or creates) `segment_name` and starts publishing every
  // `period_us`. Without a segment (empty name) only local counting is done.
  absl::Status Start(const std::vector<NicInfo>& nics, const std::string& segment_name,
                     int64_t period_us) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Adds a NIC later (a virtual device); returns its index or -1 if full.
  int AddNic(const NicInfo& nic) ABSL_LOCKS_EXCLUDED(mu_);

  void SendPosted(int nic, int cls, uint64_t bytes) {
    if (Counters* c = At(nic, cls)) {
      Add(c->send_posted_bytes, bytes);
      Add(c->send_inflight_bytes, bytes);
      Add(c->send_inflight_reqs, 1);
    }
  }
  void SendCompleted(int nic, int cls, uint64_t posted, uint64_t done) {
    if (Counters* c = At(nic, cls)) {
      Add(c->send_completed_bytes, done);
      Sub(c->send_inflight_bytes, posted);
      Sub(c->send_inflight_reqs, 1);
    }
  }
  void RecvPosted(int nic, int cls, uint64_t bytes) {
    if (Counters* c = At(nic, cls)) {
      Add(c->recv_posted_bytes, bytes);
      Add(c->recv_inflight_bytes, bytes);
      Add(c->recv_inflight_reqs, 1);
    }
  }
  void RecvCompleted(int nic, int cls, uint64_t posted, uint64_t done) {
    if (Counters* c = At(nic, cls)) {
      Add(c->recv_completed_bytes, done);
      Sub(c->recv_inflight_bytes, posted);
      Sub(c->recv_inflight_reqs, 1);
    }
  }
  // A request dropped without completing (error, or its comm was closed).
  void Abandoned(int nic, int cls, bool send, uint64_t posted) {
    if (Counters* c = At(nic, cls)) {
      Sub(send ? c->send_inflight_bytes : c->recv_inflight_bytes, posted);
      Sub(send ? c->send_inflight_reqs : c->recv_inflight_reqs, 1);
    }
  }

  // This process's counters (what the next publish will write).
  trirace_occ_counters_t Local(int nic, int cls) const;
  bool publishing() const { return slot_ != nullptr; }

 private:
  struct alignas(64) Counters {
    std::atomic<uint64_t> send_posted_bytes{0}, send_completed_bytes{0}, recv_posted_bytes{0},
        recv_completed_bytes{0}, send_inflight_bytes{0}, recv_inflight_bytes{0},
        send_inflight_reqs{0}, recv_inflight_reqs{0};
  };
  static void Add(std::atomic<uint64_t>& a, uint64_t v) { a.fetch_add(v, std::memory_order_relaxed); }
  static void Sub(std::atomic<uint64_t>& a, uint64_t v) { a.fetch_sub(v, std::memory_order_relaxed); }
  Counters* At(int nic, int cls) {
    if (nic < 0 || nic >= num_nics_.load(std::memory_order_acquire) || cls < 0 ||
        cls >= TRIRACE_OCC_NUM_CLASSES) {
      return nullptr;
    }
    return &counters_[nic][cls];
  }
  absl::Status Attach(const std::string& segment_name) ABSL_LOCKS_EXCLUDED(mu_);
  trirace_occ_proc_t* Slots() const;
  void ClaimSlot() ABSL_LOCKS_EXCLUDED(mu_);
  void Leave();
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the NIC table and counters into `p` (its sequence must be odd).
  void WriteRecord(trirace_occ_proc_t& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  Counters counters_[TRIRACE_OCC_MAX_NICS][TRIRACE_OCC_NUM_CLASSES];  // lock-free
  NicInfo nics_[TRIRACE_OCC_MAX_NICS] ABSL_GUARDED_BY(mu_);
  // Entries of nics_ in use; stored (release) under mu_, loaded (acquire)
  // without it by At().
  std::atomic<int> num_nics_{0};

  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  int fd_ = -1;       // the segment, kept open for flock
  std::string name_;  // the segment's shm name
  trirace_occ_proc_t* slot_ = nullptr;
  int64_t period_us_ = 1000;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;  // the publisher thread's exit request
  std::thread thread_;
};

}  // namespace trirace::occupancy

#endif  // TRIRACE_PLUGIN_OCCUPANCY_PUBLISHER_H_
