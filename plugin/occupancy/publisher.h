// The occupancy publisher: per-NIC byte and request counters, updated on the
// data path with relaxed atomics, copied into this process's slot of the
// host's occupancy segment (include/trirace/occupancy.h) under the slot's
// sequence lock, so readers never see torn records.
//
// When a copy is made: the data path makes it itself, without a thread
// hand-off, when a NIC and class turns busy or idle (its first request
// posted, its last one completed or dropped) and, while traffic flows, when
// the copy is older than TRIRACE_NET_PUBLISH_US (checked by every counter
// method and by Poll(), which the core calls from test()). An edge less
// than kMinEdgeGapUs after the last copy waits for the next call after
// that gap, made before that call changes anything (so that back-to-back
// tiny operations cannot keep the slot locked against readers, and readers
// see them done rather than always in flight); an operation shorter than
// the gap may never show in flight, only in the byte counters, and the end
// of the last one waits for the next call or the heartbeat. So a reader
// sees the starts and ends of traffic when they happen and the counters in
// between at most one period late, and a process costs no wake-ups while
// its links are busy or idle. A heartbeat thread copies once per
// kHeartbeatUs (or per period if longer) to catch a due copy that was
// skipped because another thread held the writer flag, and to refresh
// update_ns.
//
// Usage (the plugin core):
//   OccupancyPublisher pub;
//   pub.Start({{"eth0", 100000}, {"lo", 10000}});   // once, after device discovery
//   pub.SendPosted(nic, cls, bytes);  ...  pub.SendCompleted(nic, cls, bytes, done_bytes);
//   pub.Poll();                                     // in a test() that completed nothing
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
// Thread safety: the counter methods and Poll are thread-safe and take no
// lock; Start and Stop must not race with each other. One thread at a time
// writes the slot: the writer flag writing_ (a spin flag) guards the slot's
// contents and the last-copy bookkeeping. An edge waits for the flag (the
// holder's copy may predate the edge); a due copy that finds it taken
// leaves the copy to a later call or the heartbeat. nics_ is append-only:
// AddNic fills entry n under mu_ (which serialises appenders and guards
// stop_) and then publishes num_nics_ (release); entry i never changes once
// num_nics_ > i, so writers read it without the lock. The segment fields
// (map_, fd_, name_, slot_, period_ns_, thread_) belong to Start and Stop;
// live_ tells data-path writers (under writing_) whether slot_ may be
// written.
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

  // How often the heartbeat thread copies (or every period, if longer).
  static constexpr int64_t kHeartbeatUs = 100000;
  // The least time between a copy and an edge's copy.
  static constexpr int64_t kMinEdgeGapUs = 20;

  OccupancyPublisher();
  ~OccupancyPublisher();
  OccupancyPublisher(const OccupancyPublisher&) = delete;
  OccupancyPublisher& operator=(const OccupancyPublisher&) = delete;

  // Attaches to (or creates) `segment_name` and starts publishing, at most
  // `period_us` late while traffic flows. Without a segment (empty name)
  // only local counting is done.
  absl::Status Start(const std::vector<NicInfo>& nics, const std::string& segment_name,
                     int64_t period_us) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Adds a NIC later (a virtual device); returns its index or -1 if full.
  int AddNic(const NicInfo& nic) ABSL_LOCKS_EXCLUDED(mu_);

  // The counter methods: each may copy the counters into the slot (see
  // the file comment). The request gauges' old values tell the edges: a
  // first post finds 0 requests in flight, a last completion finds 1.
  void SendPosted(int nic, int cls, uint64_t bytes) {
    if (Counters* c = At(nic, cls)) {
      CopyPendingEdge();
      Add(c->send_posted_bytes, bytes);
      Add(c->send_inflight_bytes, bytes);
      Changed(Add(c->send_inflight_reqs, 1) == 0);
    }
  }
  void SendCompleted(int nic, int cls, uint64_t posted, uint64_t done) {
    if (Counters* c = At(nic, cls)) {
      CopyPendingEdge();
      Add(c->send_completed_bytes, done);
      Sub(c->send_inflight_bytes, posted);
      Changed(Sub(c->send_inflight_reqs, 1) == 1);
    }
  }
  void RecvPosted(int nic, int cls, uint64_t bytes) {
    if (Counters* c = At(nic, cls)) {
      CopyPendingEdge();
      Add(c->recv_posted_bytes, bytes);
      Add(c->recv_inflight_bytes, bytes);
      Changed(Add(c->recv_inflight_reqs, 1) == 0);
    }
  }
  void RecvCompleted(int nic, int cls, uint64_t posted, uint64_t done) {
    if (Counters* c = At(nic, cls)) {
      CopyPendingEdge();
      Add(c->recv_completed_bytes, done);
      Sub(c->recv_inflight_bytes, posted);
      Changed(Sub(c->recv_inflight_reqs, 1) == 1);
    }
  }
  // A request dropped without completing (error, or its comm was closed).
  void Abandoned(int nic, int cls, bool send, uint64_t posted) {
    if (Counters* c = At(nic, cls)) {
      CopyPendingEdge();
      Sub(send ? c->send_inflight_bytes : c->recv_inflight_bytes, posted);
      Changed(Sub(send ? c->send_inflight_reqs : c->recv_inflight_reqs, 1) == 1);
    }
  }
  // From a caller that changed nothing (a test() still waiting): copies
  // changes not yet in the slot once they are a period old.
  void Poll() {
    if (dirty_.load(std::memory_order_relaxed)) MaybePublish(/*edge=*/false);
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
  // Both return the old value.
  static uint64_t Add(std::atomic<uint64_t>& a, uint64_t v) { return a.fetch_add(v, std::memory_order_relaxed); }
  static uint64_t Sub(std::atomic<uint64_t>& a, uint64_t v) { return a.fetch_sub(v, std::memory_order_relaxed); }
  // An edge still waiting for its copy is copied (once the gap allows)
  // before the next change, so that readers see the state it left (a
  // short operation done) rather than only the states at later posts.
  void CopyPendingEdge() {
    if (edge_pending_.load(std::memory_order_relaxed) && live_.load(std::memory_order_relaxed)) {
      MaybePublish(/*edge=*/false);
    }
  }
  void Changed(bool edge) {
    if (!live_.load(std::memory_order_relaxed)) return;
    // After the counters, and a read-modify-write so that every setter's
    // release is in the sequence the copier's acquiring exchange reads:
    // the copier that clears it sees all the counters it stands for.
    dirty_.exchange(true, std::memory_order_release);
    MaybePublish(edge);
  }
  // Copies the counters now if `edge` (waiting for another writer to
  // finish), else if the last copy is a period old (not waiting).
  void MaybePublish(bool edge);
  // Takes the writer flag and copies the counters; leaves the copy to a
  // later call if the flag stays taken (AcquireWriter's `spins`).
  void TryPublish(int spins);
  // Takes writing_, giving up after `spins` tries (-1: until it is free,
  // spinning and then yielding); false if it stayed taken. ReleaseWriter
  // gives it back.
  bool AcquireWriter(int spins);
  void ReleaseWriter() { writing_.store(false, std::memory_order_release); }
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
  // The writer's part (writing_ held): one copy under the sequence lock.
  void Publish(uint64_t now_ns);
  // Writes the counters (and NICs added since the last copy) into `p`,
  // whose sequence must be odd.
  void WriteRecord(trirace_occ_proc_t& p, uint64_t now_ns);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  Counters counters_[TRIRACE_OCC_MAX_NICS][TRIRACE_OCC_NUM_CLASSES];  // lock-free
  NicInfo nics_[TRIRACE_OCC_MAX_NICS];  // append-only (see the thread-safety note)
  // Entries of nics_ in use; stored (release) under mu_, loaded (acquire)
  // without it.
  std::atomic<int> num_nics_{0};
  std::atomic<bool> writing_{false};  // the writer flag
  std::atomic<bool> live_{false};     // slot_ may be written (set by Start, cleared by Stop)
  std::atomic<bool> dirty_{false};    // counters changed since the last copy began
  std::atomic<bool> edge_pending_{false};  // an edge waits for kMinEdgeGapUs (implies dirty_)
  std::atomic<uint64_t> last_publish_ns_{0};  // when the last copy was made
  int nics_written_ = 0;  // NIC names already in the slot (writing_ held)

  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  int fd_ = -1;       // the segment, kept open for flock
  std::string name_;  // the segment's shm name
  trirace_occ_proc_t* slot_ = nullptr;
  int64_t period_ns_ = 1000000;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;  // the heartbeat thread's exit request
  std::thread thread_;
};

}  // namespace trirace::occupancy

#endif  // TRIRACE_PLUGIN_OCCUPANCY_PUBLISHER_H_
