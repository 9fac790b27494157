// StreamWatcher over the fake device: a watched function runs after the
// stream's earlier work, never holds the stream, and keeps the order of
// its key.
#include "interpose/stream_watcher.h"

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "interpose/comm/comm_state.h"
#include "tests/interpose/fake_device.h"

namespace trirace::interpose {
namespace {

using testing::FakeDevice;

// What the watched functions saw, in the order they ran.
struct Log {
  std::mutex mu;
  std::vector<std::string> entries;
  void Add(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    entries.push_back(s);
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return entries;
  }
};

struct Call {
  Call(Log* l, std::string n) : log(l), name(std::move(n)) {}
  Log* log;
  std::string name;
  absl::Notification ran;
  absl::Notification* hold = nullptr;  // the function waits for it when set
};

void RunCall(void* p) {
  auto* c = static_cast<Call*>(p);
  if (c->hold != nullptr) c->hold->WaitForNotification();
  c->log->Add(c->name);
  c->ran.Notify();
}

class StreamWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      auto s = dev_.CreateStream();
      ASSERT_TRUE(s.ok()) << s.status();
      streams_.push_back(*s);
    }
    auto gates = dev_.AllocateGates(2);
    ASSERT_TRUE(gates.ok()) << gates.status();
    gates_ = *std::move(gates);
  }
  void TearDown() override {
    gates_->Open(0, 1);
    gates_->Open(1, 1);
    EXPECT_TRUE(dev_.Drain(absl::Seconds(30)));
  }
  // Stream i stops until Open(i).
  void Close(int i) { ASSERT_TRUE(dev_.WaitGate(streams_[i], *gates_, i, 1).ok()); }
  void Open(int i) { gates_->Open(i, 1); }

  FakeDevice dev_;
  StreamWatcher watcher_{dev_};
  std::vector<device::StreamHandle> streams_;
  std::unique_ptr<device::GateBlock> gates_;
  Log log_;
};

TEST_F(StreamWatcherTest, RunsAfterTheWorkQueuedBeforeAndNotBefore) {
  std::atomic<bool> work_done{false};
  Close(0);
  ASSERT_TRUE(dev_.Enqueue(streams_[0], [&] { work_done = true; }).ok());
  Call c(&log_, "after work");
  ASSERT_TRUE(watcher_.Watch(streams_[0], nullptr, 0, &RunCall, &c).ok());
  EXPECT_FALSE(c.ran.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  Open(0);
  ASSERT_TRUE(c.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(work_done);
}

TEST_F(StreamWatcherTest, TheWatchedStreamDoesNotWaitForTheFunction) {
  // A host function on the stream itself would hold the work after it
  // until the function returned; the watcher's does not.
  absl::Notification hold;
  Call c(&log_, "held");
  c.hold = &hold;
  ASSERT_TRUE(watcher_.Watch(streams_[0], nullptr, 0, &RunCall, &c).ok());
  absl::Notification later;
  ASSERT_TRUE(dev_.Enqueue(streams_[0], [&] { later.Notify(); }).ok());
  EXPECT_TRUE(later.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(c.ran.HasBeenNotified());
  hold.Notify();
  EXPECT_TRUE(c.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST_F(StreamWatcherTest, OneKeyRunsInQueueOrderAcrossStreams) {
  // Stream 0's work is late, stream 1's is done at once: with one key the
  // second function still runs after the first (a comm's ops complete in
  // issue order).
  Close(0);
  Call first(&log_, "stream 0");
  Call second(&log_, "stream 1");
  int comm = 0;
  ASSERT_TRUE(watcher_.Watch(streams_[0], &comm, 0, &RunCall, &first).ok());
  ASSERT_TRUE(watcher_.Watch(streams_[1], &comm, 0, &RunCall, &second).ok());
  EXPECT_FALSE(second.ran.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  Open(0);
  ASSERT_TRUE(second.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(log_.Get(), (std::vector<std::string>{"stream 0", "stream 1"}));
  EXPECT_EQ(watcher_.watcher_streams(), 1u);
}

TEST_F(StreamWatcherTest, KeysDoNotWaitForEachOther) {
  Close(0);
  Call late(&log_, "key a");
  Call early(&log_, "key b");
  int a = 0;
  int b = 0;
  ASSERT_TRUE(watcher_.Watch(streams_[0], &a, 0, &RunCall, &late).ok());
  ASSERT_TRUE(watcher_.Watch(streams_[1], &b, 0, &RunCall, &early).ok());
  ASSERT_TRUE(early.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(late.ran.HasBeenNotified());
  Open(0);
  ASSERT_TRUE(late.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(log_.Get(), (std::vector<std::string>{"key b", "key a"}));
  EXPECT_EQ(watcher_.watcher_streams(), 2u);
}

TEST_F(StreamWatcherTest, ALaterRecordElsewhereDoesNotReleaseAnEarlierWatch) {
  // One key's event is recorded on stream 0 (late), then on stream 1 (done
  // at once): the first watch still waits for stream 0's point, as a CUDA
  // wait waits for the record it saw.
  Close(0);
  std::atomic<bool> work_done{false};
  ASSERT_TRUE(dev_.Enqueue(streams_[0], [&] { work_done = true; }).ok());
  Call first(&log_, "stream 0");
  Call second(&log_, "stream 1");
  int comm = 0;
  ASSERT_TRUE(watcher_.Watch(streams_[0], &comm, 0, &RunCall, &first).ok());
  ASSERT_TRUE(watcher_.Watch(streams_[1], &comm, 0, &RunCall, &second).ok());
  EXPECT_FALSE(first.ran.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  EXPECT_FALSE(work_done);
  Open(0);
  ASSERT_TRUE(second.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(first.ran.HasBeenNotified());
  EXPECT_TRUE(work_done);
}

TEST_F(StreamWatcherTest, AStreamIsItsOwnKeyPerDevice) {
  Call a(&log_, "a");
  Call b(&log_, "b");
  Call c(&log_, "c");
  ASSERT_TRUE(watcher_.Watch(streams_[0], nullptr, 0, &RunCall, &a).ok());
  ASSERT_TRUE(watcher_.Watch(streams_[0], nullptr, 0, &RunCall, &b).ok());
  ASSERT_TRUE(watcher_.Watch(streams_[0], nullptr, 1, &RunCall, &c).ok());
  for (Call* call : {&a, &b, &c}) ASSERT_TRUE(call->ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(watcher_.watcher_streams(), 2u);
}

// A destroyed comm's queue goes (a job that makes and destroys comms kept
// a stream and an event per comm it ever had); what was queued has run,
// and the comm's cached queue is gone with it.
TEST_F(StreamWatcherTest, ForgetDropsADestroyedCommsQueue) {
  CommState a, b;
  a.device = b.device = 0;
  Call first(&log_, "a");
  Call other(&log_, "b");
  ASSERT_TRUE(watcher_.Watch(streams_[0], &a, &RunCall, &first).ok());
  ASSERT_TRUE(watcher_.Watch(streams_[1], &b, &RunCall, &other).ok());
  EXPECT_EQ(watcher_.watcher_streams(), 2u);
  ASSERT_TRUE(first.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  watcher_.Forget(&a);
  EXPECT_EQ(watcher_.watcher_streams(), 1u);
  EXPECT_EQ(a.watch_queue.load(), nullptr);
  watcher_.Forget(&a);  // twice: nothing left to drop
  EXPECT_EQ(watcher_.watcher_streams(), 1u);
  ASSERT_TRUE(other.ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  watcher_.Forget(&b);
  EXPECT_EQ(watcher_.watcher_streams(), 0u);
}

}  // namespace
}  // namespace trirace::interpose
