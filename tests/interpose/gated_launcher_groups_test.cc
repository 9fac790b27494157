// GatedLauncher over the fake device (fixture: gating_over_fake_device.h),
// the cases beside the main invariants: an op NCCL runs at call time in a
// group, and what passes through untouched. A stream under capture and a
// nonblocking comm go to the real call unchanged, untaken, ungated, and
// nothing of the launcher's is queued on a captured stream, also when such
// an op comes later in a group that its first op made gated or P2P.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/interpose/gating_over_fake_device.h"

namespace trirace::interpose::testing {
namespace {

TEST_P(GatingOverFakeDevice, AnOpNcclRunsAtCallTimeInsideAGroupWaitsForItsCallersStream) {
  nccl_.SetEagerInGroup(true);
  struct Slow {
    FakeNccl* nccl;
    int64_t order = -1;
  } slow{&nccl_};
  ASSERT_TRUE(dev_.LaunchHostFunc(user_streams_[0],
                                  [](void* p) {
                                    auto* s = static_cast<Slow*>(p);
                                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
                                    s->order = s->nccl->NextDeviceOrder();
                                  },
                                  &slow)
                  .ok());
  NewOp(NcclFunc::kAllReduce, 0, 0, 64);
  ASSERT_EQ(GroupStart(7), ncclSuccess);
  Issue(0, 7);
  ASSERT_EQ(GroupEnd(), ncclSuccess);
  ASSERT_TRUE(dev_.Drain(absl::Seconds(30)));
  const std::vector<Call> calls = nccl_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_NE(calls[0].stream, static_cast<cudaStream_t>(user_streams_[0])) << "the op went to the dedicated stream";
  EXPECT_GT(calls[0].device_order, slow.order) << "the op ran before the work its caller queued first";
  for (size_t k = 0; k < 64; ++k) ASSERT_EQ(ops_[0].recv[k], 2 * ops_[0].send[k]);
}

TEST_P(GatingOverFakeDevice, CapturedStreamsAndNonblockingCommsPassThroughUnchanged) {
  dev_.SetCapturing(user_streams_[1]);
  comms_[0]->nonblocking = true;
  const size_t big = 5 * kChunkBytes / sizeof(float);
  NewOp(NcclFunc::kAllReduce, 1, 1, big);  // captured stream
  NewOp(NcclFunc::kAllReduce, 0, 0, big);  // nonblocking comm
  for (size_t i = 0; i < 2; ++i) Issue(i, 0);
  ASSERT_TRUE(dev_.Drain(absl::Seconds(30)));
  const std::vector<Call> calls = nccl_.calls();
  ASSERT_EQ(calls.size(), 2u) << "passthrough ops are never chunked";
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(calls[i].count, big);
    EXPECT_EQ(calls[i].stream, user_streams_[ops_[i].stream]);
    EXPECT_FALSE(ops_[i].taken);
    EXPECT_EQ(ops_[i].returned, ncclSuccess);
  }
  EXPECT_TRUE(dev_.gate_waits().empty());
  EXPECT_EQ(launcher_->stats().passthrough, 2u);
  EXPECT_EQ(sink_.started(), 0u);
  EXPECT_EQ(dev_.captured_ops(), 0);
}

TEST_P(GatingOverFakeDevice, AGroupsLaterOpOnACapturedStreamIsLeftAlone) {
  // Stream 1 is captured; each group's first op (stream 0) decides a
  // gated (collective-first) or P2P group. The captured op must be neither
  // taken nor ordered into the lane, stamped or watched: any of those would
  // join the launcher's streams to the application's graph.
  dev_.SetCapturing(user_streams_[1]);
  const size_t n = 256;
  // The captured ops are on comm 1: NCCL may refuse to mix a captured and
  // an uncaptured stream of one comm in a group.
  NewOp(NcclFunc::kAllReduce, 0, 0, n);
  NewOp(NcclFunc::kAllReduce, 1, 1, n);  // captured
  NewOp(NcclFunc::kSend, 0, 0, n);
  NewOp(NcclFunc::kRecv, 1, 1, n);  // captured
  for (uint64_t group : {1, 2}) {
    ASSERT_EQ(GroupStart(group), ncclSuccess);
    Issue(2 * (group - 1), group);
    Issue(2 * (group - 1) + 1, group);
    ASSERT_EQ(GroupEnd(), ncclSuccess);
  }
  ASSERT_TRUE(dev_.Drain(absl::Seconds(30)));
  EXPECT_EQ(dev_.captured_ops(), 0) << "the launcher queued work on a captured stream";
  const std::vector<Call> calls = nccl_.calls();
  ASSERT_EQ(calls.size(), 4u);
  for (size_t i = 0; i < ops_.size(); ++i) {
    const bool captured = ops_[i].stream == 1;
    EXPECT_EQ(ops_[i].taken, !captured) << "op " << i;
    EXPECT_EQ(ops_[i].returned, ncclSuccess) << "op " << i;
    if (captured) {
      EXPECT_EQ(calls[i].stream, user_streams_[1]) << "op " << i << " left its stream";
    }
  }
  for (size_t k = 0; k < n; ++k) ASSERT_EQ(ops_[0].recv[k], 2 * ops_[0].send[k]);
  for (size_t k = 0; k < n; ++k) ASSERT_EQ(ops_[1].recv[k], 2 * ops_[1].send[k]);
  for (size_t k = 0; k < n; ++k) ASSERT_EQ(ops_[3].recv[k], 7);
  EXPECT_EQ(launcher_->stats().passthrough, 2u);
  EXPECT_EQ(sink_.started(), 2u);
}

// A refused call opens its gate at once (nothing of it is on the stream);
// its record, finished when the stream passes that gate, can come before
// the engine's release and must still carry the gate fields. (Found under
// the sanitizers, whose slower engine thread let the stream win.)
TEST_P(GatingOverFakeDevice, ARefusedCallsRecordCarriesItsGateWait) {
  constexpr size_t kOps = 24;
  for (size_t i = 0; i < kOps; ++i) {
    AppOp& a = NewOp(NcclFunc::kAllReduce, static_cast<int>(i % 2), static_cast<int>(i % 2), 64);
    a.fail_with = ncclInvalidArgument;
    a.fail_chunk = 0;
    Issue(i, 0);
    EXPECT_EQ(a.returned, ncclInvalidArgument);
  }
  ASSERT_TRUE(dev_.Drain(absl::Seconds(30)));
  EXPECT_EQ(nccl_.calls().size(), kOps);
  const std::vector<TraceRecord> records = sink_.finished();
  ASSERT_EQ(records.size(), kOps);
  for (const TraceRecord& r : records) {
    EXPECT_EQ(r.result, ncclInvalidArgument);
    EXPECT_GE(r.gate_wait_ns, 0) << "seq " << r.seq << " of comm " << r.comm_index;
    EXPECT_LE(r.gate_wait_ns, kHoldUs * 1000 + kSlackNs);
    EXPECT_GE(r.release_reason, 1);
  }
}

// ncclCommDestroy retires the comm's lane (its stream, events and gate
// ring) without waiting; the watchdog frees it once its work has drained
// and no gate of it is watched. Before this, every comm a job ever made
// kept its lane.
TEST_P(GatingOverFakeDevice, ADestroyedCommsLaneIsFreedOnceItsWorkHasDrained) {
  const size_t big = 3 * kChunkBytes / sizeof(float);
  NewOp(NcclFunc::kAllReduce, 0, 0, big);
  NewOp(NcclFunc::kAllReduce, 1, 1, big);
  Issue(0, 0);
  Issue(1, 0);
  EXPECT_EQ(launcher_->stats().lanes, 2u);
  launcher_->CommRemoved(comms_[0].get());  // its chunks may still be held: it waits, it does not block
  EXPECT_EQ(comms_[0]->lane.load(), nullptr);
  EXPECT_NE(comms_[1]->lane.load(), nullptr);
  ASSERT_TRUE(dev_.Drain(absl::Seconds(30)));
  launcher_->CommRemoved(comms_[1].get());
  // The watchdog lets go of the last gates at its next sweep (within the
  // bound) and frees idle retired lanes at least every kRetirePollNs.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (launcher_->stats().lanes_freed < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  const GatedLauncher::Stats stats = launcher_->stats();
  EXPECT_EQ(stats.lanes, 0u);
  EXPECT_EQ(stats.lanes_retiring, 0u);
  EXPECT_EQ(stats.lanes_freed, 2u);
  // A comm made afterwards (here: comm 0's state, its lane gone) gets a new
  // lane on a freed ring.
  NewOp(NcclFunc::kAllReduce, 0, 0, big);
  Issue(2, 0);
  ASSERT_TRUE(dev_.Drain(absl::Seconds(30)));
  EXPECT_EQ(launcher_->stats().lanes, 1u);
  for (size_t i = 0; i < 3; ++i) {
    for (size_t k = 0; k < big; ++k) ASSERT_EQ(ops_[i].recv[k], 2 * ops_[i].send[k]) << "op " << i;
  }
  for (const FakeDevice::GateWait& w : dev_.gate_waits()) EXPECT_GE(w.passed_ns, 0) << "a gate never opened";
  EXPECT_EQ(sink_.finished().size(), sink_.started());
}

}  // namespace
}  // namespace trirace::interpose::testing
