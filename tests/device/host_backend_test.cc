// The host backend against the real hostccl: streams, events, gates, and
// the ordering gates impose. Built only when the hostccl target exists.
#include <dlfcn.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "interpose/device/device.h"

namespace trirace::device {
namespace {

// Appends its tag to a shared log when a stream reaches it.
struct Marker {
  std::mutex* mu;
  std::vector<int>* log;
  int tag;
  static void Run(void* arg) {
    auto* m = static_cast<Marker*>(arg);
    std::lock_guard<std::mutex> lock(*m->mu);
    m->log->push_back(m->tag);
  }
};

class HostBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nccl_ = dlopen(TRIRACE_HOSTCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(nccl_, nullptr) << dlerror();
    auto dev = SelectDevice(nccl_);
    ASSERT_TRUE(dev.ok()) << dev.status();
    dev_ = std::move(*dev);
  }
  void TearDown() override { dev_.reset(); }  // hostccl stays loaded: its workers may still run

  StreamHandle NewStream() {
    auto s = dev_->CreateStream();
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or(nullptr);
  }
  EventHandle NewEvent() {
    auto e = dev_->CreateEvent();
    EXPECT_TRUE(e.ok()) << e.status();
    return e.value_or(nullptr);
  }
  std::vector<int> Log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

  void* nccl_ = nullptr;
  std::unique_ptr<Device> dev_;
  std::mutex mu_;
  std::vector<int> log_;
};

TEST_F(HostBackendTest, SelectsTheHostBackendForHostccl) {
  EXPECT_TRUE(IsHostccl(nccl_));
  EXPECT_EQ(dev_->name(), "host");
  StreamHandle s = NewStream();
  auto capturing = dev_->IsCapturing(s);
  ASSERT_TRUE(capturing.ok());
  EXPECT_FALSE(*capturing);
  EXPECT_TRUE(dev_->DestroyStream(s).ok());
}

TEST_F(HostBackendTest, AClosedGateHoldsLaterWorkUntilOpened) {
  StreamHandle s = NewStream();
  EventHandle done = NewEvent();
  auto gates = dev_->AllocateGates(2);
  ASSERT_TRUE(gates.ok()) << gates.status();
  Marker m{&mu_, &log_, 1};
  ASSERT_TRUE(dev_->WaitGate(s, **gates, 0, 1).ok());
  ASSERT_TRUE(dev_->LaunchHostFunc(s, &Marker::Run, &m).ok());
  ASSERT_TRUE(dev_->RecordEvent(done, s).ok());
  // The gate is closed, so the work behind it cannot have run.
  auto q = dev_->QueryEvent(done);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_FALSE(*q);
  EXPECT_TRUE(Log().empty());
  (*gates)->Open(0, 1);
  ASSERT_TRUE(dev_->SynchronizeEvent(done).ok());
  EXPECT_THAT(Log(), ::testing::ElementsAre(1));
  q = dev_->QueryEvent(done);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(*q);
  EXPECT_TRUE(dev_->DestroyEvent(done).ok());
  EXPECT_TRUE(dev_->DestroyStream(s).ok());
}

TEST_F(HostBackendTest, GatesOpenedInReverseOrderReleaseStreamsInThatOrder) {
  StreamHandle a = NewStream();
  StreamHandle b = NewStream();
  EventHandle a_done = NewEvent();
  EventHandle b_done = NewEvent();
  auto gates = dev_->AllocateGates(2);
  ASSERT_TRUE(gates.ok());
  Marker ma{&mu_, &log_, 1};
  Marker mb{&mu_, &log_, 2};
  ASSERT_TRUE(dev_->WaitGate(a, **gates, 0, 1).ok());
  ASSERT_TRUE(dev_->LaunchHostFunc(a, &Marker::Run, &ma).ok());
  ASSERT_TRUE(dev_->RecordEvent(a_done, a).ok());
  ASSERT_TRUE(dev_->WaitGate(b, **gates, 1, 1).ok());
  ASSERT_TRUE(dev_->LaunchHostFunc(b, &Marker::Run, &mb).ok());
  ASSERT_TRUE(dev_->RecordEvent(b_done, b).ok());

  (*gates)->Open(1, 1);  // b first, although it was enqueued second
  ASSERT_TRUE(dev_->SynchronizeEvent(b_done).ok());
  EXPECT_THAT(Log(), ::testing::ElementsAre(2));
  EXPECT_FALSE(*dev_->QueryEvent(a_done)) << "a's gate is still closed";
  (*gates)->Open(0, 1);
  ASSERT_TRUE(dev_->SynchronizeEvent(a_done).ok());
  EXPECT_THAT(Log(), ::testing::ElementsAre(2, 1));
}

TEST_F(HostBackendTest, EventDependenciesCarryAGateAcrossStreams) {
  StreamHandle dedicated = NewStream();
  StreamHandle user = NewStream();
  EventHandle e_done = NewEvent();
  EventHandle user_done = NewEvent();
  auto gates = dev_->AllocateGates(1);
  ASSERT_TRUE(gates.ok());
  Marker op{&mu_, &log_, 1};
  Marker after{&mu_, &log_, 2};
  // The gated-launch pattern: the user stream waits the dedicated stream's op.
  ASSERT_TRUE(dev_->WaitGate(dedicated, **gates, 0, 1).ok());
  ASSERT_TRUE(dev_->LaunchHostFunc(dedicated, &Marker::Run, &op).ok());
  ASSERT_TRUE(dev_->RecordEvent(e_done, dedicated).ok());
  ASSERT_TRUE(dev_->StreamWaitEvent(user, e_done).ok());
  ASSERT_TRUE(dev_->LaunchHostFunc(user, &Marker::Run, &after).ok());
  ASSERT_TRUE(dev_->RecordEvent(user_done, user).ok());
  EXPECT_FALSE(*dev_->QueryEvent(user_done));
  (*gates)->Open(0, 1);
  ASSERT_TRUE(dev_->SynchronizeEvent(user_done).ok());
  EXPECT_THAT(Log(), ::testing::ElementsAre(1, 2));
}

TEST_F(HostBackendTest, AGateWordIsReusedWithGrowingValues) {
  StreamHandle s = NewStream();
  EventHandle first = NewEvent();
  EventHandle second = NewEvent();
  auto gates = dev_->AllocateGates(1);
  ASSERT_TRUE(gates.ok());
  ASSERT_TRUE(dev_->WaitGate(s, **gates, 0, 1).ok());
  ASSERT_TRUE(dev_->RecordEvent(first, s).ok());
  ASSERT_TRUE(dev_->WaitGate(s, **gates, 0, 2).ok());
  ASSERT_TRUE(dev_->RecordEvent(second, s).ok());
  (*gates)->Open(0, 1);
  ASSERT_TRUE(dev_->SynchronizeEvent(first).ok());
  EXPECT_FALSE(*dev_->QueryEvent(second)) << "use 2 of the word waits for value 2";
  (*gates)->Open(0, 2);
  ASSERT_TRUE(dev_->SynchronizeEvent(second).ok());
  EXPECT_EQ((*gates)->Value(0), 2u);
}

TEST_F(HostBackendTest, GateArgumentsAreChecked) {
  StreamHandle s = NewStream();
  auto gates = dev_->AllocateGates(1);
  ASSERT_TRUE(gates.ok());
  EXPECT_EQ(dev_->WaitGate(s, **gates, 1, 1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(dev_->AllocateGates(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(dev_->RecordEvent(nullptr, s).ok()) << "hostccl rejects a null event";
}

// A caller's stream is checked without using it (and without hostccl's
// WARN): the gated launch passes a bad one on to NCCL instead.
TEST_F(HostBackendTest, StreamIsValidTellsLiveStreamsFromOthers) {
  StreamHandle live = NewStream();
  StreamHandle gone = NewStream();
  ASSERT_TRUE(dev_->DestroyStream(gone).ok());
  int not_a_stream = 0;
  EXPECT_TRUE(dev_->StreamIsValid(live));
  EXPECT_TRUE(dev_->StreamIsValid(nullptr)) << "NULL is the default host stream";
  EXPECT_FALSE(dev_->StreamIsValid(gone));
  EXPECT_FALSE(dev_->StreamIsValid(&not_a_stream));
}

}  // namespace
}  // namespace trirace::device
