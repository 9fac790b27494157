// GatingOverFakeDevice: the fixture of the GatedLauncher tests over a fake
// device and a fake real NCCL (what they check: gated_launcher_test.cc).
//
// FakeNccl is the RealNccl table: it logs every call in host order, fails
// the calls it is told to, defers the stream work of grouped calls to the
// outermost ncclGroupEnd (as NCCL does), and on the stream computes a known
// function of the input (AllReduce / ReduceScatter: 2x, Broadcast /
// AllGather: copy, Recv: 7) and stamps the device order. The fixture plays
// the shim's side: it builds each Op and record as IssueOp does, keeps the
// thread's user group, and stamps stream points (Mark). Parameterised by
// the policy; one binary instantiates it (gated_launcher_test.cc).
#ifndef TRIRACE_TESTS_INTERPOSE_GATING_OVER_FAKE_DEVICE_H_
#define TRIRACE_TESTS_INTERPOSE_GATING_OVER_FAKE_DEVICE_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/params.h"
#include "gtest/gtest.h"
#include "interpose/comm/comm_state.h"
#include "interpose/comm/user_group.h"
#include "interpose/device/device.h"
#include "interpose/forward.h"
#include "interpose/gate/gated_launcher.h"
#include "interpose/gate/launcher.h"
#include "nccl_adapter/nccl_types.h"
#include "scheduler/chunk_planner.h"
#include "tests/interpose/fake_device.h"
#include "tests/interpose/recording_sink.h"

namespace trirace::interpose::testing {

inline constexpr int64_t kHoldUs = 3000;
inline constexpr uint64_t kChunkBytes = 4096;  // 1024 floats
// Beyond the bound, tolerated for a thread that waits for a CPU (as
// gating_test.cc).
inline constexpr int64_t kSlackNs = 500'000'000;

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

inline FakeNccl* g_nccl = nullptr;

inline ncclResult_t FakeAllReduce(const void* s, void* r, size_t n, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kAllReduce, s, r, n, st);
}
inline ncclResult_t FakeReduceScatter(const void* s, void* r, size_t n, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                               cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kReduceScatter, s, r, n, st);
}
inline ncclResult_t FakeBroadcast(const void* s, void* r, size_t n, ncclDataType_t, int, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kBroadcast, s, r, n, st);
}
inline ncclResult_t FakeAllGather(const void* s, void* r, size_t n, ncclDataType_t, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kAllGather, s, r, n, st);
}
inline ncclResult_t FakeSend(const void* s, size_t n, ncclDataType_t, int, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kSend, s, nullptr, n, st);
}
inline ncclResult_t FakeRecv(void* r, size_t n, ncclDataType_t, int, ncclComm_t, cudaStream_t st) {
  return g_nccl->Issue(NcclFunc::kRecv, nullptr, r, n, st);
}
inline ncclResult_t FakeGroupStart() { return g_nccl->GroupStart(); }
inline ncclResult_t FakeGroupEnd() { return g_nccl->GroupEnd(); }

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
inline void MarkerFn(void* p) {
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
    // Its watchdog's Stop() frees the tickets it still watches (the leak
    // check of the sanitized run sees any left).
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

}  // namespace trirace::interpose::testing

#endif  // TRIRACE_TESTS_INTERPOSE_GATING_OVER_FAKE_DEVICE_H_
