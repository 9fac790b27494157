// GatedLauncher in one process, over a fake device and a fake real NCCL:
// the gating invariants without hostccl or a GPU, and with every stream
// operation visible.
//
// FakeDevice (the device::Device interface) runs each stream as a FIFO of
// work items on a thread of its own: events, gate waits (polled, as the
// gates open by plain stores), host functions, and the fake NCCL's
// "kernels". FakeNccl is the RealNccl table: it logs every call in host
// order, fails the calls it is told to, defers the stream work of grouped
// calls to the outermost ncclGroupEnd (as NCCL does), and on the stream
// computes a known function of the input (AllReduce / ReduceScatter: 2x,
// Broadcast / AllGather: copy, Recv: 7) and stamps the device order.
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
// Passthrough: a stream under capture and a nonblocking comm go to the real
// call unchanged, untaken, ungated.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/params.h"
#include "gtest/gtest.h"
#include "interpose/comm_state.h"
#include "interpose/device/device.h"
#include "tests/interpose/fake_device.h"
#include "tests/interpose/recording_sink.h"
#include "interpose/forward.h"
#include "interpose/gated_launcher.h"
#include "interpose/launcher.h"
#include "interpose/user_group.h"
#include "nccl_adapter/nccl_types.h"
#include "scheduler/chunk_planner.h"

namespace trirace::interpose::testing {
namespace {

constexpr int64_t kHoldUs = 3000;
constexpr uint64_t kChunkBytes = 4096;  // 1024 floats
// Beyond the bound, tolerated for a thread that waits for a CPU (as
// gating_test.cc).
constexpr int64_t kSlackNs = 500'000'000;

// ------------------------------------------------------------------ NCCL

struct Call {
  NcclFunc func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  cudaStream_t stream;
  ncclResult_t result;
  int64_t device_order = -1;  // when its work ran on the stream
  int64_t device_ns = -1;
};

class FakeNccl {
 public:
  explicit FakeNccl(FakeDevice& dev) : dev_(dev) {}

  ncclResult_t Issue(NcclFunc f, const void* send, void* recv, size_t count, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    auto fail = fail_.find(send != nullptr ? send : recv);
    const ncclResult_t r = fail != fail_.end() ? fail->second : ncclSuccess;
    calls_.push_back({f, send, recv, count, stream, r});
    if (r != ncclSuccess) return r;  // rejected before anything is queued
    if (depth_ > 0 && !eager_in_group_) {
      deferred_.push_back(calls_.size() - 1);
    } else {
      Launch(calls_.size() - 1);
    }
    return ncclSuccess;
  }
  ncclResult_t GroupStart() {
    std::lock_guard<std::mutex> lock(mu_);
    ++depth_;
    return ncclSuccess;
  }
  ncclResult_t GroupEnd() {
    std::lock_guard<std::mutex> lock(mu_);
    if (depth_ == 0) return ncclInvalidUsage;
    if (--depth_ == 0) {
      for (size_t i : deferred_) Launch(i);
      deferred_.clear();
    }
    return ncclSuccess;
  }

  // Runs ops at call time inside a group too, as NCCL does with a one-rank
  // comm's collectives (a copy on the given stream).
  void SetEagerInGroup(bool eager) {
    std::lock_guard<std::mutex> lock(mu_);
    eager_in_group_ = eager;
  }
  // The call whose buffer (sendbuff, or recvbuff for Recv) is `buffer` fails.
  void FailAt(const void* buffer, ncclResult_t r) { fail_[buffer] = r; }
  std::vector<Call> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int64_t NextDeviceOrder() { return device_clock_.fetch_add(1); }

 private:
  // mu_ held.
  void Launch(size_t i) {
    const Call c = calls_[i];
    const absl::Status s = dev_.Enqueue(c.stream, [this, i, c] {
      const auto* in = static_cast<const float*>(c.sendbuff);
      auto* out = static_cast<float*>(c.recvbuff);
      for (size_t k = 0; k < c.count; ++k) {
        switch (c.func) {
          case NcclFunc::kAllReduce:
          case NcclFunc::kReduceScatter:
            out[k] = 2 * in[k];
            break;
          case NcclFunc::kBroadcast:
          case NcclFunc::kAllGather:
            out[k] = in[k];
            break;
          case NcclFunc::kRecv:
            out[k] = 7;
            break;
          default:
            break;
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      calls_[i].device_order = NextDeviceOrder();
      calls_[i].device_ns = MonotonicNs();
    });
    EXPECT_TRUE(s.ok()) << s;
  }

  FakeDevice& dev_;
  std::mutex mu_;
  std::vector<Call> calls_;
  std::map<const void*, ncclResult_t> fail_;
  int depth_ = 0;
  bool eager_in_group_ = false;
  std::vector<size_t> deferred_;
  std::atomic<int64_t> device_clock_{0};
};

FakeNccl* g_nccl = nullptr;

ncclResult_t FakeAllReduce(const void* s, void* r, size_t n, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kAllReduce, s, r, n, st);
}
ncclResult_t FakeReduceScatter(const void* s, void* r, size_t n, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                               cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kReduceScatter, s, r, n, st);
}
ncclResult_t FakeBroadcast(const void* s, void* r, size_t n, ncclDataType_t, int, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kBroadcast, s, r, n, st);
}
ncclResult_t FakeAllGather(const void* s, void* r, size_t n, ncclDataType_t, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kAllGather, s, r, n, st);
}
ncclResult_t FakeSend(const void* s, size_t n, ncclDataType_t, int, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kSend, s, nullptr, n, st);
}
ncclResult_t FakeRecv(void* r, size_t n, ncclDataType_t, int, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kRecv, nullptr, r, n, st);
}
ncclResult_t FakeGroupStart() { return g_nccl->GroupStart(); }
ncclResult_t FakeGroupEnd() { return g_nccl->GroupEnd(); }

// ------------------------------------------------------------- the shim side

// One application call, its buffers and what the launcher did with it.
struct AppOp {
  NcclFunc func;
  int comm;    // index into comms_
  int stream;  // index into user streams
  size_t count;
  std::vector<float> send, recv;
  size_t fail_chunk = SIZE_MAX;  // the chunk (or, unchunked, 0) the fake rejects
  ncclResult_t fail_with = ncclSuccess;
  uint64_t group = 0;
  uint64_t seq = 0;
  ncclResult_t returned = ncclSuccess;
  bool taken = false;
  sched::ChunkPlan plan;  // the chunks the launcher must issue (grouped: one)
};

// Stamps a point of a user stream with the device order.
struct Marker {
  FakeNccl* nccl;
  int stream;
  std::vector<size_t> ops;  // the AppOps of the step before it
  int64_t order = -1;
};
void MarkerFn(void* p) {
  auto* m = static_cast<Marker*>(p);
  m->order = m->nccl->NextDeviceOrder();
}

class GatingOverFakeDevice : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    setenv("TRIRACE_POLICY", GetParam(), 1);
    setenv("TRIRACE_MAX_HOLD_US", std::to_string(kHoldUs).c_str(), 1);
    setenv("TRIRACE_CHUNK_BYTES", std::to_string(kChunkBytes).c_str(), 1);
    // The ops carry float sums: let them split, to exercise chunking (SplitIsExact: op_test.cc).
    setenv("TRIRACE_CHUNK_FLOAT_REDUCTIONS", "on", 1);
    setenv("TRIRACE_OCCUPANCY", "none", 1);
    unsetenv("TRIRACE_EXCLUDE_ROLES");
    Params::ReloadForTesting();
    g_nccl = &nccl_;
    real_.AllReduce = &FakeAllReduce;
    real_.ReduceScatter = &FakeReduceScatter;
    real_.Broadcast = &FakeBroadcast;
    real_.AllGather = &FakeAllGather;
    real_.Send = &FakeSend;
    real_.Recv = &FakeRecv;
    real_.GroupStart = &FakeGroupStart;
    real_.GroupEnd = &FakeGroupEnd;
    for (int i = 0; i < 2; ++i) {
      auto c = std::make_unique<CommState>();
      c->comm = reinterpret_cast<ncclComm_t>(static_cast<uintptr_t>(0x1000 + i));
      c->id = 0xc0ffee00 + i;
      c->index = i + 1;
      c->rank = 0;
      c->nranks = 2;
      c->device = 0;
      c->annotated_role.store(i == 0 ? TRIRACE_ROLE_DATA_PARALLEL : TRIRACE_ROLE_EXPERT);
      comms_.push_back(std::move(c));
      auto s = dev_.CreateStream();
      ASSERT_TRUE(s.ok()) << s.status();
      user_streams_.push_back(*s);
    }
    auto l = GatedLauncher::Create(real_, &sink_, dev_, watcher_);
    ASSERT_TRUE(l.ok()) << l.status();
    launcher_ = *std::move(l);
  }

  void TearDown() override {
    EXPECT_TRUE(dev_.Drain(absl::Seconds(30)));
    // Lets the watchdog sweep (and free) the tickets it still watches.
    std::this_thread::sleep_for(std::chrono::microseconds(3 * kHoldUs));
    launcher_.reset();
    g_nccl = nullptr;
    for (const char* v : {"TRIRACE_POLICY", "TRIRACE_MAX_HOLD_US", "TRIRACE_CHUNK_BYTES", "TRIRACE_OCCUPANCY",
                          "TRIRACE_CHUNK_FLOAT_REDUCTIONS"}) {
      unsetenv(v);
    }
    Params::ReloadForTesting();
  }

  AppOp& NewOp(NcclFunc func, int comm, int stream, size_t count) {
    AppOp& a = ops_.emplace_back();
    a.func = func;
    a.comm = comm;
    a.stream = stream;
    a.count = count;
    a.send.resize(count);
    for (size_t k = 0; k < count; ++k) a.send[k] = static_cast<float>(ops_.size() * 10000 + k);
    a.recv.assign(count, -1);
    return a;
  }

  const void* SendBuf(const AppOp& a) const { return a.func == NcclFunc::kRecv ? nullptr : a.send.data(); }
  void* RecvBuf(AppOp& a) const { return a.func == NcclFunc::kSend ? nullptr : a.recv.data(); }

  // What the shim's IssueOp does before the launcher, then the launch.
  void Issue(size_t index, uint64_t group) {
    AppOp& a = ops_[index];
    a.group = group;
    CommState* state = comms_[a.comm].get();
    Op op = MakeOp(a.func, SendBuf(a), RecvBuf(a), a.count, ncclFloat32, ncclSum, 0, state->comm,
                   static_cast<cudaStream_t>(user_streams_[a.stream]));
    op.state = state;
    op.group = group != 0 ? &group_ : nullptr;
    op.bytes = a.count * DataTypeSize(ncclFloat32);
    op.seq = a.seq = state->next_seq.fetch_add(1);
    op.call_ns = MonotonicNs();
    TraceRecord r;
    r.func = op.func;
    r.op_class = static_cast<uint8_t>(ClassifyOp(op.func, EffectiveRole(*state, nullptr), op.tag.traffic_class));
    r.comm_index = state->index;
    r.count = op.count;
    r.bytes = op.bytes;
    r.seq = op.seq;
    r.group_id = group;
    r.start_ns = op.call_ns;
    r.tag = op.tag;

    if (group == 0 && !IsPointToPoint(a.func) && sched::IsChunkable(a.func)) {
      a.plan = sched::PlanChunks(a.func, a.count, sizeof(float), kChunkBytes);
    } else {
      a.plan.chunks = {{0, a.count}};
    }
    if (a.fail_chunk != SIZE_MAX) {
      const size_t off = a.plan.chunks.at(a.fail_chunk).offset;
      nccl_.FailAt(a.func == NcclFunc::kRecv ? static_cast<const void*>(a.recv.data() + off) : a.send.data() + off,
                   a.fail_with);
    }
    OpRecording recording{&r, false};
    a.returned = launcher_->Launch(op, &recording);
    a.taken = recording.taken;
    r.result = a.returned;
    if (op.group != nullptr && recording.taken) group_.Add({r, state, op.stream, true});
  }

  // The shim's side of ncclGroupStart / ncclGroupEnd on the thread's group.
  ncclResult_t GroupStart(uint64_t id) {
    const ncclResult_t r = launcher_->GroupStart();
    if (r == ncclSuccess) group_.Enter(id);
    return r;
  }
  ncclResult_t GroupEnd() {
    const bool closed = group_.Leave();
    const ncclResult_t r = launcher_->GroupEnd(group_);
    if (closed) group_.Reset();
    return r;
  }

  void Mark(const std::vector<size_t>& ops) {
    std::set<int> streams;
    for (size_t i : ops) streams.insert(ops_[i].stream);
    for (int s : streams) {
      Marker& m = markers_.emplace_back(Marker{&nccl_, s, ops});
      ASSERT_TRUE(dev_.LaunchHostFunc(user_streams_[s], &MarkerFn, &m).ok());
    }
  }

  FakeDevice dev_;  // outlives the launcher, which borrows it
  StreamWatcher watcher_{dev_};  // likewise
  FakeNccl nccl_{dev_};
  RealNccl real_;
  Sink sink_;
  std::vector<std::unique_ptr<CommState>> comms_;
  std::vector<device::StreamHandle> user_streams_;
  std::deque<AppOp> ops_;
  std::deque<Marker> markers_;
  std::unique_ptr<GatedLauncher> launcher_;
  UserGroup group_;  // the test thread's user group, as the shim keeps it
};

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
}

INSTANTIATE_TEST_SUITE_P(Policies, GatingOverFakeDevice,
                         ::testing::Values("fifo", "priority", "trirace", "adversarial"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace trirace::interpose::testing
