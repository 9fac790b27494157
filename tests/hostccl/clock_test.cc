// The device clock across ranks (docs/hostccl.md, "Device clock"): a send
// and receive over shared memory take no device time, so the compute after
// a receive starts when the sender's work before the send ended, whenever
// the receiving worker woke. Two ranks as threads of this process, through
// CommCore and the group layer (hostccl_internal), whose clock times are
// computed and so compared exactly.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#include "gtest/gtest.h"
#include "hostccl/src/bootstrap.h"
#include "hostccl/src/comm.h"
#include "hostccl/src/group.h"
#include "hostccl/src/host_stream.h"

namespace trirace::hostccl {
namespace {

using Clock = HostStream::Clock;
using std::chrono::milliseconds;

int64_t Ns(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

Clock::time_point ClockAt(const HostEvent& event) {
  event.Wait();
  std::optional<Clock::time_point> end = event.Recorded().mark->End();
  EXPECT_TRUE(end.has_value());
  return end.value_or(Clock::time_point());
}

// Two ranks of one communicator, set up concurrently.
struct TwoRanks {
  std::shared_ptr<CommCore> core[2];
  TwoRanks() {
    setenv("NCCL_NET_PLUGIN", HOSTCCL_NET_PLUGIN_PATH, 1);
    ncclUniqueId id;
    EXPECT_TRUE(CreateUniqueId(&id).ok());
    absl::Status status[2];
    auto init = [&](int r) {
      core[r] = std::make_shared<CommCore>(2, r, CommConfig{});
      status[r] = core[r]->Init(id);
    };
    std::thread other(init, 1);
    init(0);
    other.join();
    EXPECT_TRUE(status[0].ok()) << status[0];
    EXPECT_TRUE(status[1].ok()) << status[1];
  }
  ~TwoRanks() {
    for (auto& c : core) c->Shutdown();
  }
};

// A sending and a receiving stream behind one closed gate, so that all
// work is enqueued before any runs. The receiver waits on an event after
// the sender's gate, so both start at one clock time (the clock crosses
// events exactly), however far apart their workers wake.
struct GatedStreams {
  uint32_t gate = 0;
  std::shared_ptr<HostStream> sender = std::make_shared<HostStream>();
  std::shared_ptr<HostStream> receiver = std::make_shared<HostStream>();
  HostEvent opened;
  GatedStreams() {
    EnqueueWaitValue32(*sender, &gate, 1);
    opened.Record(sender);
    receiver->EnqueueWaitEvent(opened);
  }
  ~GatedStreams() {
    Open();  // a failed check must not leave work queued behind the gate
    sender->Close();
    receiver->Close();
  }
  void Open() { __atomic_store_n(&gate, 1u, __ATOMIC_RELEASE); }
};

OpDesc P2p(NcclFunc func, float* data, int peer) {
  OpDesc op;
  op.func = func;
  op.sendbuff = data;
  op.recvbuff = data;
  op.count = 1;
  op.type = ncclFloat32;
  op.root = peer;
  return op;
}

TEST(HostcclClockAcrossRanks, AReceiveOverSharedMemoryTakesNoDeviceTime) {
  TwoRanks ranks;
  ASSERT_TRUE(ranks.core[0] && ranks.core[1]);
  float sent = 42, got = 0;  // before the streams, which may still use them
  GatedStreams s;
  HostEvent computed, received, after;
  s.sender->EnqueueCompute(milliseconds(20));
  computed.Record(s.sender);
  ASSERT_TRUE(EnqueueOp(ranks.core[0], P2p(NcclFunc::kSend, &sent, 1), s.sender).ok());
  ASSERT_TRUE(EnqueueOp(ranks.core[1], P2p(NcclFunc::kRecv, &got, 0), s.receiver).ok());
  received.Record(s.receiver);
  s.receiver->EnqueueCompute(milliseconds(10));
  after.Record(s.receiver);
  s.Open();
  const Clock::time_point at_computed = ClockAt(computed);
  EXPECT_EQ(Ns(ClockAt(received) - at_computed), 0) << "the hop took device time";
  EXPECT_EQ(Ns(ClockAt(after) - at_computed), Ns(milliseconds(10)));
  EXPECT_EQ(got, 42);
}

TEST(HostcclClockAcrossRanks, AReceiveThatWasPostedLateEndsOnItsOwnClock) {
  TwoRanks ranks;
  ASSERT_TRUE(ranks.core[0] && ranks.core[1]);
  float sent = 7, got = 0;
  GatedStreams s;
  HostEvent sent_at, ready, received;
  ASSERT_TRUE(EnqueueOp(ranks.core[0], P2p(NcclFunc::kSend, &sent, 1), s.sender).ok());
  sent_at.Record(s.sender);
  s.receiver->EnqueueCompute(milliseconds(20));
  ready.Record(s.receiver);
  ASSERT_TRUE(EnqueueOp(ranks.core[1], P2p(NcclFunc::kRecv, &got, 0), s.receiver).ok());
  received.Record(s.receiver);
  s.Open();
  EXPECT_EQ(ClockAt(received), ClockAt(ready)) << "the data was there before the receive";
  EXPECT_LT(ClockAt(sent_at), ClockAt(ready));
  EXPECT_EQ(got, 7);
}

TEST(HostcclClockAcrossRanks, ALaunchStartsNoEarlierThanTheCommsLaunchBeforeItOnAnotherStream) {
  // The comm runs its launches one after another, whatever their streams:
  // the second send, on a stream with nothing before it, ends on the clock
  // no earlier than the first, which followed 20 ms of compute.
  TwoRanks ranks;
  ASSERT_TRUE(ranks.core[0] && ranks.core[1]);
  float first = 1, second = 2, got[2] = {0, 0};
  GatedStreams s;
  auto other = std::make_shared<HostStream>();
  other->EnqueueWaitEvent(s.opened);
  HostEvent computed, second_sent;
  s.sender->EnqueueCompute(milliseconds(20));
  computed.Record(s.sender);
  ASSERT_TRUE(EnqueueOp(ranks.core[0], P2p(NcclFunc::kSend, &first, 1), s.sender).ok());
  ASSERT_TRUE(EnqueueOp(ranks.core[0], P2p(NcclFunc::kSend, &second, 1), other).ok());
  second_sent.Record(other);
  ASSERT_TRUE(EnqueueOp(ranks.core[1], P2p(NcclFunc::kRecv, &got[0], 0), s.receiver).ok());
  ASSERT_TRUE(EnqueueOp(ranks.core[1], P2p(NcclFunc::kRecv, &got[1], 0), s.receiver).ok());
  s.Open();
  EXPECT_GE(ClockAt(second_sent), ClockAt(computed));
  s.receiver->EnqueueCompute(milliseconds(0));
  HostEvent received;
  received.Record(s.receiver);
  ClockAt(received);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 2);
  other->Close();
}

}  // namespace
}  // namespace trirace::hostccl
