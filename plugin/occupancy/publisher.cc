#include "plugin/occupancy/publisher.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/status.h"
#include "plugin/occupancy/segment.h"

namespace trirace::occupancy {
namespace {

constexpr int kAttachWaitMs = 2000;  // for a creator that is still initialising
constexpr int kAttachAttempts = 8;   // a segment unlinked while we opened it: open again

// flock(LOCK_EX) on the segment's fd for one join or leave; see Attach.
class SegmentLock {
 public:
  explicit SegmentLock(int fd) : fd_(fd) {
    while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~SegmentLock() { flock(fd_, LOCK_UN); }
  SegmentLock(const SegmentLock&) = delete;
  SegmentLock& operator=(const SegmentLock&) = delete;

 private:
  int fd_;
};

bool Unlinked(int fd) {
  struct stat st{};
  return fstat(fd, &st) == 0 && st.st_nlink == 0;
}

}  // namespace

OccupancyPublisher::OccupancyPublisher() = default;

OccupancyPublisher::~OccupancyPublisher() { Stop(); }

int OccupancyPublisher::AddNic(const NicInfo& nic) {
  int n;
  {
    absl::MutexLock lock(&mu_);
    n = num_nics_.load(std::memory_order_relaxed);
    if (n >= TRIRACE_OCC_MAX_NICS) return -1;
    nics_[n] = nic;
    num_nics_.store(n + 1, std::memory_order_release);
  }
  Changed(/*edge=*/true);  // readers see the new NIC at once
  return n;
}

absl::Status OccupancyPublisher::Start(const std::vector<NicInfo>& nics,
                                       const std::string& segment_name, int64_t period_us) {
  for (const NicInfo& nic : nics) {
    if (AddNic(nic) < 0) break;
  }
  period_ns_ = period_us * 1000;
  if (segment_name.empty()) return absl::OkStatus();
  absl::Status st;
  for (int attempt = 0; attempt < kAttachAttempts; ++attempt) {
    st = Attach(segment_name);
    if (!st.ok()) return st;
    if (map_ != nullptr) break;  // joined; null: the segment was removed meanwhile
  }
  if (map_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("occupancy segment ", segment_name,
                                               " was removed ", kAttachAttempts,
                                               " times while joining it"));
  }
  if (slot_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "occupancy segment ", segment_name, ": all ", TRIRACE_OCC_MAX_PROCS, " process slots are in use"));
  }
  // ClaimSlot wrote the first record: the data path and the heartbeat copy from here on.
  last_publish_ns_.store(0, std::memory_order_relaxed);  // the first edge needs no gap
  live_.store(true, std::memory_order_release);
  try {
    thread_ = std::thread(&OccupancyPublisher::Run, this);
  } catch (const std::system_error& e) {
    return SystemError("starting the occupancy publisher thread", e.code().value());
  }
  return absl::OkStatus();
}

// Joining and leaving are serialised by flock(LOCK_EX) on the segment: a
// joiner claims its slot under the lock, a leaver frees its slot and, when
// no live process is left, unlinks the segment under the same lock. A
// joiner that gets the lock on a segment that was unlinked meanwhile
// (st_nlink 0) returns with map_ null, and Start opens the name again.
// Readers take no lock: they never create, write or unlink.
absl::Status OccupancyPublisher::Attach(const std::string& name) {
  const size_t bytes = TRIRACE_OCC_SEGMENT_BYTES;
  bool creator = true;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    creator = false;
    fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0 && errno == ENOENT) return absl::OkStatus();  // removed since: open again
  }
  if (fd < 0) return SystemError(absl::StrCat("shm_open(", name, ")"), errno);
  // The creator locks before sizing the segment, so a joiner (which waits
  // for the size first) always finds it initialised once it holds the lock.
  std::optional<SegmentLock> lock;
  if (creator) lock.emplace(fd);
  auto fail = [&](absl::Status st) {
    lock.reset();
    close(fd);
    return st;
  };
  struct stat st{};
  if (fstat(fd, &st) != 0) return fail(SystemError(absl::StrCat("fstat(", name, ")"), errno));
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    return fail(absl::PermissionDeniedError(absl::StrCat(
        "occupancy segment ", name, " is owned by uid ", st.st_uid, " with mode 0",
        absl::Hex(st.st_mode & 0777), "; expected uid ", geteuid(), " and mode 0600")));
  }
  if (creator) {
    fchmod(fd, 0600);  // independent of the umask
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      int err = errno;
      shm_unlink(name.c_str());
      return fail(SystemError(absl::StrCat("ftruncate(", name, ")"), err));
    }
  } else {
    for (int waited = 0; st.st_size < static_cast<off_t>(bytes) && waited < kAttachWaitMs; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      fstat(fd, &st);
    }
    if (st.st_size != static_cast<off_t>(bytes)) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "occupancy segment ", name, " has ", st.st_size, " bytes; this build expects ", bytes,
          " (layout version ", TRIRACE_OCC_VERSION, "): not publishing")));
    }
  }
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return fail(SystemError(absl::StrCat("mmap(", name, ")"), errno));
  auto* header = static_cast<trirace_occ_header_t*>(map);
  if (creator) {
    header->version = TRIRACE_OCC_VERSION;
    header->header_bytes = sizeof(trirace_occ_header_t);
    header->proc_bytes = sizeof(trirace_occ_proc_t);
    header->max_procs = TRIRACE_OCC_MAX_PROCS;
    header->max_nics = TRIRACE_OCC_MAX_NICS;
    header->num_classes = TRIRACE_OCC_NUM_CLASSES;
    header->create_ns = NowNs();
    std::string job = name.substr(name.find('-', name.find('-') + 1) + 1);
    std::strncpy(header->job, job.c_str(), sizeof(header->job) - 1);
    Atomic(header->magic).store(TRIRACE_OCC_MAGIC, std::memory_order_release);
  } else {
    for (int waited = 0; Atomic(header->magic).load(std::memory_order_acquire) != TRIRACE_OCC_MAGIC &&
                         waited < kAttachWaitMs && !Unlinked(fd);
         ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    lock.emplace(fd);
    if (Unlinked(fd)) {  // its last process left while we opened it
      munmap(map, bytes);
      return fail(absl::OkStatus());
    }
    if (Atomic(header->magic).load(std::memory_order_acquire) != TRIRACE_OCC_MAGIC ||
        !HeaderMatches(*header)) {
      munmap(map, bytes);
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "occupancy segment ", name, " has another layout (version ", header->version,
          ", this build writes ", TRIRACE_OCC_VERSION, "): not publishing")));
    }
  }
  map_ = map;
  map_bytes_ = bytes;
  fd_ = fd;
  name_ = name;
  ClaimSlot();
  return absl::OkStatus();
}

trirace_occ_proc_t* OccupancyPublisher::Slots() const {
  return reinterpret_cast<trirace_occ_proc_t*>(static_cast<char*>(map_) + sizeof(trirace_occ_header_t));
}

// Called with the segment lock held. Frees the slots of dead processes
// first (their entries count for nothing and would keep the segment alive),
// then takes a free one.
void OccupancyPublisher::ClaimSlot() {
  trirace_occ_proc_t* procs = Slots();
  for (int i = 0; i < TRIRACE_OCC_MAX_PROCS; ++i) {
    trirace_occ_proc_t& p = procs[i];
    int32_t owner = Atomic(p.owner_pid).load(std::memory_order_acquire);
    if (owner != 0 && !ProcessAlive(owner, Atomic(p.owner_start_time).load())) {
      Atomic(p.owner_pid).compare_exchange_strong(owner, 0);
    }
  }
  const int32_t me = static_cast<int32_t>(getpid());
  const uint64_t my_start = ProcessStartTime(getpid());
  for (int i = 0; i < TRIRACE_OCC_MAX_PROCS; ++i) {
    trirace_occ_proc_t& p = procs[i];
    if (Atomic(p.owner_pid).load(std::memory_order_acquire) != 0) continue;
    // The sequence turns odd before the slot shows an owner: a reader that
    // sees our pid while the old (even) sequence still stands would take
    // the empty record for a complete one.
    const uint32_t seq = Atomic(p.seq).load(std::memory_order_relaxed) | 1u;
    Atomic(p.seq).store(seq, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    int32_t owner = 0;
    if (!Atomic(p.owner_pid).compare_exchange_strong(owner, me)) {  // only without the lock's protection
      Atomic(p.seq).store(seq + 1, std::memory_order_release);
      continue;
    }
    Atomic(p.owner_start_time).store(my_start, std::memory_order_relaxed);
    std::memset(p.nics, 0, sizeof(p.nics));
    // The record is complete (NICs known so far, zero counters) before the
    // sequence turns even: a reader never sees our slot without its NICs.
    // (No other writer yet: live_ is still false.)
    nics_written_ = 0;
    WriteRecord(p, NowNs());
    Atomic(p.seq).store(seq + 1, std::memory_order_release);
    slot_ = &p;
    return;
  }
}

// Frees our slot and, if no live process is left, removes the segment.
// The lock makes this atomic against a joiner (see Attach). Only a
// segment that is still linked is unlinked: the name is then ours.
void OccupancyPublisher::Leave() {
  SegmentLock lock(fd_);
  int32_t me = static_cast<int32_t>(getpid());
  Atomic(slot_->owner_pid).compare_exchange_strong(me, 0);
  slot_ = nullptr;
  trirace_occ_proc_t* procs = Slots();
  for (int i = 0; i < TRIRACE_OCC_MAX_PROCS; ++i) {
    int32_t owner = Atomic(procs[i].owner_pid).load(std::memory_order_acquire);
    if (owner != 0 && ProcessAlive(owner, Atomic(procs[i].owner_start_time).load())) return;
  }
  if (!Unlinked(fd_) && shm_unlink(name_.c_str()) != 0 && errno != ENOENT) {
    TRIRACE_WARN(NET, "removing the occupancy segment %s: %s", name_, strerror(errno));
  }
}

void OccupancyPublisher::MaybePublish(bool edge) {
  if (edge) edge_pending_.store(true, std::memory_order_relaxed);
  const bool pending_edge = edge || edge_pending_.load(std::memory_order_relaxed);
  const uint64_t last = last_publish_ns_.load(std::memory_order_relaxed);  // before the clock: no underflow
  const uint64_t since = NowNs() - last;
  // An edge is copied once kMinEdgeGapUs has passed since the last copy
  // (readers must find the slot between copies), other changes once a
  // period has.
  if (since < static_cast<uint64_t>(pending_edge ? kMinEdgeGapUs * 1000 : period_ns_)) return;
  // An edge waits for a copy under way (it may predate the edge; a copy
  // takes well under a microsecond): spin, then yield to a holder that
  // was descheduled mid-copy. A due copy does not wait.
  TryPublish(pending_edge ? -1 : 0);
}

bool OccupancyPublisher::AcquireWriter(int spins) {
  constexpr int kSpinsBeforeYield = 256;
  for (int i = 0; writing_.exchange(true, std::memory_order_acquire); ++i) {
    if (spins >= 0 && i >= spins) return false;
    if (spins < 0 && i >= kSpinsBeforeYield) std::this_thread::yield();
  }
  return true;
}

void OccupancyPublisher::TryPublish(int spins) {
  if (!AcquireWriter(spins)) return;  // dirty_ stays set: a later call copies
  if (live_.load(std::memory_order_acquire)) Publish(NowNs());  // acquire: slot_ as Start left it
  ReleaseWriter();
}

void OccupancyPublisher::Publish(uint64_t now_ns) {
  // Cleared before the counters are read: a change made after this point
  // sets them again and is copied by a later call.
  edge_pending_.store(false, std::memory_order_relaxed);
  dirty_.exchange(false, std::memory_order_acquire);
  trirace_occ_proc_t& p = *slot_;
  uint32_t seq = Atomic(p.seq).load(std::memory_order_relaxed);
  Atomic(p.seq).store(seq + 1, std::memory_order_relaxed);  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
  WriteRecord(p, now_ns);
  Atomic(p.seq).store(seq + 2, std::memory_order_release);
  last_publish_ns_.store(now_ns, std::memory_order_relaxed);
}

void OccupancyPublisher::WriteRecord(trirace_occ_proc_t& p, uint64_t now_ns) {
  int n = num_nics_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    trirace_occ_nic_t& nic = p.nics[i];
    if (i >= nics_written_) {  // names and speeds never change once written
      for (int k = 0; k < TRIRACE_OCC_NAME_LEN; ++k) {
        char c = k < static_cast<int>(nics_[i].name.size()) && k < TRIRACE_OCC_NAME_LEN - 1
                     ? nics_[i].name[k] : '\0';
        Atomic(nic.name[k]).store(c, std::memory_order_relaxed);
      }
      Atomic(nic.speed_mbps).store(nics_[i].speed_mbps, std::memory_order_relaxed);
    }
    for (int c = 0; c < TRIRACE_OCC_NUM_CLASSES; ++c) {
      trirace_occ_counters_t v = Local(i, c);
      auto* src = reinterpret_cast<uint64_t*>(&v);
      auto* dst = reinterpret_cast<uint64_t*>(&nic.cls[c]);
      for (size_t k = 0; k < sizeof(v) / sizeof(uint64_t); ++k) {
        Atomic(dst[k]).store(src[k], std::memory_order_relaxed);
      }
    }
  }
  nics_written_ = n;
  Atomic(p.num_nics).store(static_cast<uint32_t>(n), std::memory_order_relaxed);
  Atomic(p.update_ns).store(now_ns, std::memory_order_relaxed);
}

trirace_occ_counters_t OccupancyPublisher::Local(int nic, int cls) const {
  trirace_occ_counters_t out{};
  if (nic < 0 || nic >= TRIRACE_OCC_MAX_NICS || cls < 0 || cls >= TRIRACE_OCC_NUM_CLASSES) return out;
  const Counters& c = counters_[nic][cls];
  // Completed before posted, so a reader's posted >= completed; and again
  // until the completed counts did not move meanwhile, so posted and
  // completed are of one instant even if this thread was descheduled
  // between the loads (posted - completed is then what was in flight).
  for (int attempt = 0; attempt < 64; ++attempt) {
    out.send_completed_bytes = c.send_completed_bytes.load(std::memory_order_acquire);
    out.recv_completed_bytes = c.recv_completed_bytes.load(std::memory_order_acquire);
    out.send_posted_bytes = c.send_posted_bytes.load(std::memory_order_acquire);
    out.recv_posted_bytes = c.recv_posted_bytes.load(std::memory_order_acquire);
    if (c.send_completed_bytes.load(std::memory_order_acquire) == out.send_completed_bytes &&
        c.recv_completed_bytes.load(std::memory_order_acquire) == out.recv_completed_bytes) {
      break;
    }
  }
  out.send_inflight_bytes = c.send_inflight_bytes.load(std::memory_order_relaxed);
  out.recv_inflight_bytes = c.recv_inflight_bytes.load(std::memory_order_relaxed);
  out.send_inflight_reqs = c.send_inflight_reqs.load(std::memory_order_relaxed);
  out.recv_inflight_reqs = c.recv_inflight_reqs.load(std::memory_order_relaxed);
  return out;
}

// The heartbeat: a copy every kHeartbeatUs (or period) until Stop. The
// wait ends early as soon as stop_ is set (Await checks the condition
// under mu_, so a Stop between two waits is not missed).
void OccupancyPublisher::Run() {
  const absl::Duration heartbeat = absl::Microseconds(std::max<int64_t>(kHeartbeatUs, period_ns_ / 1000));
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    if (!mu_.AwaitWithTimeout(absl::Condition(&stop_), heartbeat)) TryPublish(/*spins=*/-1);
  }
}

void OccupancyPublisher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;  // wakes Run (Await re-evaluates on unlock)
  }
  if (thread_.joinable()) thread_.join();
  if (live_.load(std::memory_order_relaxed)) {
    // The last copy; data-path writers that come later find live_ false.
    AcquireWriter(/*spins=*/-1);
    Publish(NowNs());
    live_.store(false, std::memory_order_relaxed);
    ReleaseWriter();
  }
  if (slot_ != nullptr) Leave();
  if (map_ != nullptr) {
    munmap(map_, map_bytes_);
    map_ = nullptr;
  }
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

}  // namespace trirace::occupancy
