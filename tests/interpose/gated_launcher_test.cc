// GatedLauncher in one process, over a fake device and a fake real NCCL
// (the fixture: gating_over_fake_device.h): the gating invariants without
// hostccl or a GPU, and with every stream operation visible.
//
// Under every policy, for a seeded workload on two comms and two user
// streams (chunked and unchunked collectives, Send/Recv, collective-first
// and P2P-first groups, nested groups, failing calls):
//   - the real calls come in the application's order, each op's chunks in
//     order and covering it (or up to the first failing chunk);
//   - every result is the fake's, and every record carries it;
//   - every gate the launcher put on a stream opened within the hold bound,
//     and no gated work ran before its release;
//   - every op's work ran, before anything the application queued on its
//     stream afterwards (the user stream waits for E_done);
//   - every record is finished once, per comm one per chunk / grouped op.
// The special cases (ops NCCL runs at call time in a group, captured
// streams, nonblocking comms): gated_launcher_groups_test.cc.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/interpose/gating_over_fake_device.h"

namespace trirace::interpose::testing {
namespace {

TEST_P(GatingOverFakeDevice, KeepsHostOrderOpensEveryGateInTheBoundAndPassesResultsThrough) {
  std::mt19937_64 rng(20240917);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % n); };
  const NcclFunc kCollectives[] = {NcclFunc::kAllReduce, NcclFunc::kBroadcast, NcclFunc::kAllGather,
                                   NcclFunc::kReduceScatter};
  auto collective = [&] { return kCollectives[pick(4)]; };
  auto p2p = [&] { return pick(2) == 0 ? NcclFunc::kSend : NcclFunc::kRecv; };
  std::map<uint64_t, NcclFunc> group_first;  // what the launcher decides a group's kind by
  uint64_t next_group = 1;
  for (int step = 0; step < 60; ++step) {
    const int kind = pick(10);
    if (kind < 6) {  // one op outside a group
      const NcclFunc f = kind < 5 ? collective() : p2p();
      AppOp& a = NewOp(f, pick(2), pick(2), 1 + rng() % 5000);
      if (step % 17 == 5) {  // a failing call: a middle chunk where there are several
        a.fail_with = ncclInvalidArgument;
        a.fail_chunk = 0;
        if (sched::IsChunkable(f) && a.count > 2 * kChunkBytes / sizeof(float)) a.fail_chunk = 1;
      }
      Issue(ops_.size() - 1, 0);
      Mark({ops_.size() - 1});
    } else {  // a group, nested one level deeper every other time
      const bool p2p_first = kind == 9;
      const bool nested = pick(2) == 0;
      const uint64_t group = next_group++;
      ASSERT_EQ(GroupStart(group), ncclSuccess);
      if (nested) {
        ASSERT_EQ(GroupStart(group), ncclSuccess);
      }
      std::vector<size_t> members;
      const int n = 2 + pick(3);
      for (int k = 0; k < n; ++k) {
        const NcclFunc f = k == 0 ? (p2p_first ? p2p() : collective()) : (pick(4) == 0 ? p2p() : collective());
        if (k == 0) group_first[group] = f;
        NewOp(f, pick(2), pick(2), 1 + rng() % 3000);
        Issue(ops_.size() - 1, group);
        members.push_back(ops_.size() - 1);
      }
      if (nested) {
        ASSERT_EQ(GroupEnd(), ncclSuccess);
      }
      ASSERT_EQ(GroupEnd(), ncclSuccess);
      Mark(members);
    }
  }
  ASSERT_TRUE(dev_.Drain(absl::Seconds(30))) << "a stream is stuck: a gate never opened";

  // Host order: the real calls are the application's, chunk by chunk.
  const std::vector<Call> calls = nccl_.calls();
  std::map<std::pair<size_t, size_t>, size_t> call_of;  // (op, chunk) -> index in calls
  size_t next = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    AppOp& a = ops_[i];
    const size_t issued = std::min(a.plan.chunks.size(), a.fail_chunk == SIZE_MAX ? SIZE_MAX : a.fail_chunk + 1);
    for (size_t c = 0; c < issued; ++c, ++next) {
      ASSERT_LT(next, calls.size()) << "op " << i << " chunk " << c << " never reached the real NCCL";
      const Call& call = calls[next];
      const sched::Chunk& chunk = a.plan.chunks[c];
      EXPECT_EQ(call.func, a.func) << "op " << i << " chunk " << c;
      EXPECT_EQ(call.sendbuff, a.func == NcclFunc::kRecv ? nullptr : a.send.data() + chunk.offset) << "op " << i;
      EXPECT_EQ(call.recvbuff, a.func == NcclFunc::kSend ? nullptr : a.recv.data() + chunk.offset) << "op " << i;
      EXPECT_EQ(call.count, chunk.count) << "op " << i << " chunk " << c;
      const bool on_dedicated = a.group == 0 ? !IsPointToPoint(a.func) : !IsPointToPoint(group_first[a.group]);
      EXPECT_EQ(call.stream != user_streams_[a.stream], on_dedicated)
          << "op " << i << ": gated ops and groups run on a dedicated stream, the rest on the caller's";
      call_of[{i, c}] = next;
    }
    const ncclResult_t expected = a.fail_chunk == SIZE_MAX ? ncclSuccess : a.fail_with;
    EXPECT_EQ(a.returned, expected) << "op " << i << ": the result is the real call's";
    EXPECT_TRUE(a.taken) << "op " << i << ": every op here is gated or tracked";
  }
  EXPECT_EQ(next, calls.size()) << "calls nobody made";

  // Every accepted call ran on its stream, once; each stream in issue order.
  std::map<cudaStream_t, int64_t> last_on_stream;
  for (size_t k = 0; k < calls.size(); ++k) {
    const Call& c = calls[k];
    if (c.result != ncclSuccess) {
      EXPECT_EQ(c.device_order, -1) << "call " << k << " was rejected yet ran";
      continue;
    }
    ASSERT_GE(c.device_order, 0) << "call " << k << " never ran";
    auto [it, first] = last_on_stream.try_emplace(c.stream, c.device_order);
    if (!first) {
      EXPECT_GT(c.device_order, it->second) << "call " << k << " overtook an earlier call of its stream";
    }
    it->second = c.device_order;
  }
  // ... and computed what it should (chunks cover the op; nothing past a failed chunk).
  for (size_t i = 0; i < ops_.size(); ++i) {
    const AppOp& a = ops_[i];
    if (a.func == NcclFunc::kSend) continue;
    size_t done = a.count;
    if (a.fail_chunk != SIZE_MAX) done = a.plan.chunks[a.fail_chunk].offset;
    for (size_t k = 0; k < a.count; ++k) {
      float want = -1;
      if (k < done) {
        want = a.func == NcclFunc::kRecv ? 7 : a.send[k];
        if (a.func == NcclFunc::kAllReduce || a.func == NcclFunc::kReduceScatter) want *= 2;
      }
      if (a.recv[k] != want) {
        ADD_FAILURE() << "op " << i << " element " << k << ": " << a.recv[k] << ", expected " << want;
        break;
      }
    }
  }

  // The user stream waits for the op: a point queued on it after the call
  // runs after all of the op's work (for a gated group: every user stream of
  // the group waits for all of it).
  for (const Marker& m : markers_) {
    ASSERT_GE(m.order, 0);
    for (size_t i : m.ops) {
      const AppOp& a = ops_[i];
      const bool gated_group = a.group != 0 && !IsPointToPoint(group_first[a.group]);
      if (a.stream != m.stream && !gated_group) continue;
      for (size_t c = 0; c < ops_[i].plan.chunks.size(); ++c) {
        auto it = call_of.find({i, c});
        if (it == call_of.end() || calls[it->second].device_order < 0) continue;
        EXPECT_GT(m.order, calls[it->second].device_order) << "op " << i << " chunk " << c
                                                           << " ran after later work of the caller's stream";
      }
    }
  }

  // Every gate opened, within the bound. (fifo releases everything inside
  // Submit, so its streams never wait; the adversarial policy holds at random.)
  const std::vector<FakeDevice::GateWait> waits = dev_.gate_waits();
  if (std::string(GetParam()) == "adversarial") {
    EXPECT_FALSE(waits.empty()) << "nothing was held";
  }
  for (size_t k = 0; k < waits.size(); ++k) {
    ASSERT_GE(waits[k].passed_ns, 0) << "gate wait " << k << " never passed";
    EXPECT_LE(waits[k].passed_ns - waits[k].enqueued_ns, kHoldUs * 1000 + kSlackNs) << "gate wait " << k;
  }

  // Records: one per issued chunk (grouped op: one), each with its call's
  // result; gated ones released within the bound and run after the release.
  const std::vector<TraceRecord> records = sink_.finished();
  EXPECT_EQ(records.size(), sink_.started());
  std::map<std::pair<int, uint64_t>, size_t> op_of;  // (comm index, seq) -> op
  for (size_t i = 0; i < ops_.size(); ++i) op_of[{comms_[ops_[i].comm]->index, ops_[i].seq}] = i;
  std::set<std::pair<size_t, size_t>> seen;
  size_t gated = 0;
  for (const TraceRecord& r : records) {
    auto o = op_of.find({r.comm_index, r.seq});
    ASSERT_NE(o, op_of.end()) << "a record of no op: comm " << r.comm_index << " seq " << r.seq;
    const AppOp& a = ops_[o->second];
    const size_t chunk = r.chunk_index < 0 ? 0 : static_cast<size_t>(r.chunk_index);
    EXPECT_TRUE(seen.insert({o->second, chunk}).second) << "op " << o->second << " chunk " << chunk << " twice";
    if (a.group == 0 && !IsPointToPoint(a.func)) {
      EXPECT_EQ(r.chunk_count, static_cast<int32_t>(a.plan.chunks.size())) << "op " << o->second;
    }
    auto c = call_of.find({o->second, chunk});
    ASSERT_NE(c, call_of.end()) << "a record of a chunk never issued: op " << o->second << " chunk " << chunk;
    const Call& call = calls[c->second];
    EXPECT_EQ(r.result, call.result) << "op " << o->second << " chunk " << chunk;
    EXPECT_EQ(r.completion, CompletionSource::kStream);
    if (call.result == ncclSuccess) {
      EXPECT_GE(r.end_ns, call.device_ns) << "op " << o->second << " ended before its work ran";
    }
    if (r.gate_wait_ns >= 0) {
      ++gated;
      EXPECT_LE(r.gate_wait_ns, kHoldUs * 1000 + kSlackNs) << "op " << o->second;
      EXPECT_GE(r.release_reason, 1);
      if (call.result == ncclSuccess) {
        EXPECT_GE(call.device_ns, r.start_ns + r.gate_wait_ns) << "op " << o->second << " ran before its release";
      }
    } else {
      EXPECT_TRUE(a.group == 0 ? IsPointToPoint(a.func) : IsPointToPoint(group_first[a.group]))
          << "op " << o->second << ": a collective outside a P2P-first group is gated";
    }
  }
  EXPECT_EQ(seen.size(), call_of.size()) << "issued chunks without a record";
  EXPECT_GT(gated, 0u);
  const GatedLauncher::Stats stats = launcher_->stats();
  EXPECT_GT(stats.gated_tickets, 0u);
  EXPECT_EQ(stats.passthrough, 0u);
}

// Where the launcher must not gate, the op reaches the real call exactly as
// it came, on the caller's stream, and the record stays with the shim.
// Found on a GPU: NCCL runs a one-rank comm's collectives at call time even
// inside a group, so ordering the dedicated stream after the callers'
// streams only at the group's end let such an op overtake the work its
// caller had queued before it (it read a buffer that work had not written).

INSTANTIATE_TEST_SUITE_P(Policies, GatingOverFakeDevice,
                         ::testing::Values("fifo", "priority", "trirace", "adversarial"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace trirace::interpose::testing
