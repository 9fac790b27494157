// The plugin segment backend against the net plugin's own publisher: this
// process publishes through it, a second live process's slot is written by
// hand (its traffic is foreign to us), and the reader reports both.
// Built when the trirace_occupancy library is.
#include "interpose/network/plugin_occupancy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "interpose/network/front_stage.h"
#include "plugin/occupancy/publisher.h"
#include "plugin/occupancy/segment.h"
#include "trirace/occupancy.h"
#include "trirace/trirace.h"

namespace trirace::interpose {
namespace {

class SegmentGuard {
 public:
  explicit SegmentGuard(std::string name) : name_(std::move(name)) {}
  ~SegmentGuard() { shm_unlink(name_.c_str()); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// Reads `reader`, asking again while it skips the sample because a slot is
// mid-update: that is its contract, and the publisher's thread may be
// descheduled inside a copy for longer than the read waits (sanitizers, a
// loaded machine). Any other failure, or 20 s of skips, is returned.
absl::StatusOr<OccupancySnapshot> ReadSettled(OccupancyReader& reader) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (true) {
    absl::StatusOr<OccupancySnapshot> s = reader.Read();
    if (s.ok() || s.status().code() != absl::StatusCode::kUnavailable ||
        std::chrono::steady_clock::now() >= deadline) {
      return s;
    }
    std::this_thread::yield();
  }
}

// Writes slot `index` as if process `pid` published `sent` bytes on `nic`;
// with `finish` false the writer stops mid-update (its sequence stays odd).
// `sparse_inflight` / `dense_inflight`: send bytes it has in flight per class.
void WriteForeignSlot(const std::string& shm_name, uint32_t index, pid_t pid, const char* nic, uint64_t sent,
                      bool finish = true, uint64_t sparse_inflight = 0, uint64_t dense_inflight = 0) {
  const int fd = shm_open(shm_name.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  void* map = mmap(nullptr, TRIRACE_OCC_SEGMENT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(map, MAP_FAILED);
  auto* slot = reinterpret_cast<trirace_occ_proc_t*>(static_cast<char*>(map) + sizeof(trirace_occ_header_t)) + index;
  std::atomic_ref<uint32_t>(slot->seq).store(1, std::memory_order_release);
  slot->owner_start_time = occupancy::ProcessStartTime(pid);
  slot->update_ns = occupancy::NowNs();
  slot->num_nics = 1;
  std::memset(slot->nics, 0, sizeof slot->nics);
  std::strncpy(slot->nics[0].name, nic, TRIRACE_OCC_NAME_LEN - 1);
  slot->nics[0].cls[TRIRACE_CLASS_DENSE].send_completed_bytes = sent;
  slot->nics[0].cls[TRIRACE_CLASS_SPARSE].send_inflight_bytes = sparse_inflight;
  slot->nics[0].cls[TRIRACE_CLASS_DENSE].send_inflight_bytes = dense_inflight;
  std::atomic_ref<int32_t>(slot->owner_pid).store(pid, std::memory_order_release);
  if (finish) std::atomic_ref<uint32_t>(slot->seq).store(2, std::memory_order_release);
  munmap(map, TRIRACE_OCC_SEGMENT_BYTES);
}

// Starts `pub` on NIC eth7 in segment `shm_name` (copies every 200 us) and
// has it send `bytes` of P2P.
void StartWithP2PSent(occupancy::OccupancyPublisher* pub, const std::string& shm_name, uint64_t bytes) {
  ASSERT_TRUE(pub->Start({{"eth7", 10000}}, shm_name, 200).ok());
  ASSERT_TRUE(pub->publishing());
  pub->SendPosted(0, TRIRACE_CLASS_P2P, bytes);
  pub->SendCompleted(0, TRIRACE_CLASS_P2P, bytes, bytes);
}

TEST(PluginOccupancyTest, ReportsTheJobsTrafficAndThisProcesssShare) {
  const std::string job = "sched-test-" + std::to_string(getpid());
  SegmentGuard seg(occupancy::SegmentName(job));
  occupancy::OccupancyPublisher pub;
  StartWithP2PSent(&pub, seg.name(), 1000);
  pub.RecvPosted(0, TRIRACE_CLASS_DENSE, 300);
  pub.RecvCompleted(0, TRIRACE_CLASS_DENSE, 300, 300);
  WriteForeignSlot(seg.name(), TRIRACE_OCC_MAX_PROCS - 1, getppid(), "eth7", 5000);

  ManualClock clock(123);
  auto reader = OpenPluginOccupancyReader(job, &clock);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->name(), "plugin");
  // The publisher copies its counters every 200 us: wait for a copy made
  // after the receive completed (one made between the send and the receive
  // has the send alone).
  OccupancySnapshot snap;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = ReadSettled(**reader);
    ASSERT_TRUE(s.ok()) << s.status();
    snap = *s;
    if (snap.devices.size() == 1 && snap.devices[0].has_ours && snap.devices[0].ours_tx_bytes == 1000 &&
        snap.devices[0].ours_rx_bytes == 300) {
      break;
    }
    std::this_thread::yield();
  }
  ASSERT_EQ(snap.devices.size(), 1u);
  const DeviceCounters& eth7 = snap.devices[0];
  EXPECT_EQ(snap.time_ns, 123);
  EXPECT_EQ(eth7.device, "eth7");
  EXPECT_EQ(eth7.tx_bytes, 6000u) << "ours (1000) + the other process's (5000)";
  EXPECT_EQ(eth7.rx_bytes, 300u);
  ASSERT_TRUE(eth7.has_ours);
  EXPECT_EQ(eth7.ours_tx_bytes, 1000u);
  EXPECT_EQ(eth7.ours_rx_bytes, 300u);
  EXPECT_EQ(eth7.others_urgent_send_bytes, 0) << "nothing in flight";
  pub.Stop();
}

TEST(PluginOccupancyTest, OtherProcessesUrgentSendsInFlightExcludeOursAndDenseUnlessBehind) {
  const std::string job = "sched-urgent-" + std::to_string(getpid());
  SegmentGuard seg(occupancy::SegmentName(job));
  occupancy::OccupancyPublisher pub;
  StartWithP2PSent(&pub, seg.name(), 1000);
  pub.SendPosted(0, TRIRACE_CLASS_P2P, 700);    // ours, in flight: not the others'
  pub.SendPosted(0, TRIRACE_CLASS_DENSE, 300);  // ours too, whatever the place
  WriteForeignSlot(seg.name(), TRIRACE_OCC_MAX_PROCS - 1, getppid(), "eth7", 5000, /*finish=*/true,
                   /*sparse_inflight=*/4096, /*dense_inflight=*/9999);
  // Wait (through the C reader) until the publisher has copied our 700 in flight.
  trirace_occ_reader_t* c_reader = nullptr;
  ASSERT_EQ(trirace_occ_open(job.c_str(), &c_reader), 0);
  auto all = std::make_unique<trirace_occ_snapshot_t>();
  auto own = std::make_unique<trirace_occ_snapshot_t>();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool published = false;
  while (!published && std::chrono::steady_clock::now() < deadline) {
    published = trirace_occ_read_split(c_reader, getpid(), all.get(), own.get()) == 0 && own->num_nics == 1 &&
                own->nics[0].cls[TRIRACE_CLASS_P2P].send_inflight_bytes == 700 &&
                own->nics[0].cls[TRIRACE_CLASS_DENSE].send_inflight_bytes == 300;
    if (!published) std::this_thread::yield();
  }
  trirace_occ_close(c_reader);
  ASSERT_TRUE(published);
  auto reader = OpenPluginOccupancyReader(job);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto read = ReadSettled(**reader);
  ASSERT_TRUE(read.ok()) << read.status();
  const OccupancySnapshot& snap = *read;
  ASSERT_EQ(snap.devices.size(), 1u);
  EXPECT_EQ(snap.devices[0].others_urgent_send_bytes, 4096) << "the other process's SPARSE, not its DENSE nor our P2P";
  // [R14] without class priority on the wire: a process behind its host's
  // front stage yields to the other processes' DENSE as well.
  NoteDenseAhead(HostPlace::kBehind);
  auto behind = ReadSettled(**reader);
  ResetDenseAheadForTest();
  ASSERT_TRUE(behind.ok()) << behind.status();
  ASSERT_EQ(behind->devices.size(), 1u);
  EXPECT_EQ(behind->devices[0].others_urgent_send_bytes, 4096 + 9999)
      << "the other process's SPARSE and DENSE, not our own DENSE";
  pub.Stop();
}

// A reader standing in for the counters read until the segment appears.
class FixedReader final : public OccupancyReader {
 public:
  std::string_view name() const override { return "fixed"; }
  absl::StatusOr<OccupancySnapshot> Read() override {
    OccupancySnapshot s;
    s.devices.push_back({.device = "eth7", .tx_bytes = 42});
    return s;
  }
};

TEST(PluginOccupancyTest, TheWaitingReaderSwitchesToTheSegmentWhenItAppears) {
  const std::string job = "sched-late-" + std::to_string(getpid());
  SegmentGuard seg(occupancy::SegmentName(job));
  ManualClock clock(0);
  std::unique_ptr<OccupancyReader> reader =
      PluginOccupancyReaderOnceItOpens(std::make_unique<FixedReader>(), job, &clock, /*retry_ns=*/1000);
  auto before = reader->Read();
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(reader->name(), "fixed");
  ASSERT_EQ(before->devices.size(), 1u);
  EXPECT_EQ(before->devices[0].tx_bytes, 42u) << "the fallback's counters while there is no segment";
  occupancy::OccupancyPublisher pub;
  StartWithP2PSent(&pub, seg.name(), 1000);
  clock.AdvanceNs(500);
  EXPECT_EQ(reader->name(), "fixed") << "not retried before retry_ns";
  ASSERT_TRUE(ReadSettled(*reader).ok());
  EXPECT_EQ(reader->name(), "fixed");
  clock.AdvanceNs(500);
  auto after = ReadSettled(*reader);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(reader->name(), "plugin");
  ASSERT_FALSE(after->devices.empty());
  for (const DeviceCounters& c : after->devices) {
    EXPECT_NE(c.series, before->devices[0].series) << "rates must restart at the switch";
  }
  bool ours = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!ours && std::chrono::steady_clock::now() < deadline) {
    auto s = ReadSettled(*reader);
    ASSERT_TRUE(s.ok()) << s.status();
    ours = s->devices.size() == 1 && s->devices[0].has_ours && s->devices[0].ours_tx_bytes == 1000;
  }
  EXPECT_TRUE(ours) << "the segment's counters, with this process's share";
  pub.Stop();
}

TEST(PluginOccupancyTest, TheWaitingReaderStopsTryingASegmentItCannotRead) {
  // A segment of another layout (size): not NotFound, so not retried.
  const std::string job = "sched-alien-" + std::to_string(getpid());
  SegmentGuard seg(occupancy::SegmentName(job));
  {
    const int fd = shm_open(seg.name().c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    close(fd);
  }
  ManualClock clock(0);
  std::unique_ptr<OccupancyReader> reader =
      PluginOccupancyReaderOnceItOpens(std::make_unique<FixedReader>(), job, &clock, /*retry_ns=*/1000);
  auto first = reader->Read();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(reader->name(), "fixed");
  // A readable segment replaces it; the reader gave up and stays on its fallback.
  shm_unlink(seg.name().c_str());
  occupancy::OccupancyPublisher pub;
  StartWithP2PSent(&pub, seg.name(), 1000);
  for (int i = 0; i < 3; ++i) {
    clock.AdvanceNs(1000);
    auto s = ReadSettled(*reader);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->devices.size(), 1u);
    EXPECT_EQ(s->devices[0].tx_bytes, 42u);
  }
  EXPECT_EQ(reader->name(), "fixed");
  pub.Stop();
}

TEST(PluginOccupancyTest, ASlotStuckMidUpdateSkipsTheSampleInsteadOfAPartialSum) {
  const std::string job = "sched-stuck-" + std::to_string(getpid());
  SegmentGuard seg(occupancy::SegmentName(job));
  occupancy::OccupancyPublisher pub;
  StartWithP2PSent(&pub, seg.name(), 1000);
  ManualClock clock(5);
  auto reader = OpenPluginOccupancyReader(job, &clock);
  ASSERT_TRUE(reader.ok()) << reader.status();
  WriteForeignSlot(seg.name(), TRIRACE_OCC_MAX_PROCS - 1, getppid(), "eth7", 5000, /*finish=*/false);
  auto stuck = (*reader)->Read();
  ASSERT_FALSE(stuck.ok()) << "the read summed the other slots without the stuck one";
  EXPECT_EQ(stuck.status().code(), absl::StatusCode::kUnavailable) << stuck.status();
  EXPECT_NE(stuck.status().message().find("mid-update"), std::string::npos) << stuck.status();
  // The writer finishes: the next sample has both processes.
  WriteForeignSlot(seg.name(), TRIRACE_OCC_MAX_PROCS - 1, getppid(), "eth7", 5000);
  uint64_t tx = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline && tx != 6000) {
    auto s = ReadSettled(**reader);
    ASSERT_TRUE(s.ok()) << s.status();
    tx = s->devices.empty() ? 0 : s->devices[0].tx_bytes;
    std::this_thread::yield();
  }
  EXPECT_EQ(tx, 6000u) << "ours (1000) + the other process's (5000)";
  pub.Stop();
}

TEST(PluginOccupancyTest, AMissingSegmentIsNotFound) {
  auto reader = OpenPluginOccupancyReader("no-such-job-" + std::to_string(getpid()));
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace trirace::interpose
