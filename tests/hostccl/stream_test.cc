// The host stream API (hostccl/stream.h): ordering, concurrency, events,
// gates, queries and handle checks; and the device clock across events,
// checked on the classes behind it (hostccl/src/host_stream.h), whose clock
// times are computed, so they are compared exactly.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hostccl/src/host_stream.h"
#include <hostccl/stream.h>

namespace {

using trirace::hostccl::EnqueueWaitValue32;
using trirace::hostccl::HostEvent;
using trirace::hostccl::HostStream;

struct Log {
  std::mutex mu;
  std::vector<int> order;
};

struct Step {
  Log* log;
  int id;
};

void Append(void* p) {
  auto* s = static_cast<Step*>(p);
  std::lock_guard<std::mutex> lock(s->log->mu);
  s->log->order.push_back(s->id);
}

void OpenGate(void* p) { __atomic_store_n(static_cast<uint32_t*>(p), 1u, __ATOMIC_RELEASE); }

TEST(HostcclStream, WorkOnOneStreamRunsInOrder) {
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  Log log;
  std::vector<Step> steps;
  for (int i = 0; i < 100; ++i) steps.push_back(Step{&log, i});
  for (int i = 0; i < 100; ++i) {
    if (i % 10 == 0) {
      ASSERT_EQ(hostcclStreamCompute(s, 50), ncclSuccess);
    }
    ASSERT_EQ(hostcclLaunchHostFunc(s, Append, &steps[i]), ncclSuccess);
  }
  ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  ASSERT_EQ(log.order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(log.order[i], i);
  EXPECT_EQ(hostcclStreamDestroy(s), ncclSuccess);
}

TEST(HostcclStream, GateHoldsLaterWorkUntilOpened) {
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  uint32_t gate = 0;
  Log log;
  Step after{&log, 7};
  ASSERT_EQ(hostcclStreamWaitValue32(s, &gate, 1), ncclSuccess);
  ASSERT_EQ(hostcclLaunchHostFunc(s, Append, &after), ncclSuccess);
  EXPECT_EQ(hostcclStreamQuery(s), ncclInProgress);
  {
    std::lock_guard<std::mutex> lock(log.mu);
    EXPECT_TRUE(log.order.empty());
  }
  __atomic_store_n(&gate, 1u, __ATOMIC_RELEASE);
  ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  EXPECT_EQ(log.order, std::vector<int>{7});
  EXPECT_EQ(hostcclStreamQuery(s), ncclSuccess);
  hostcclStreamDestroy(s);
}

TEST(HostcclStream, GateComparesCyclically) {
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  // 0xfffffff0 is "before" 5 in cyclic order; 5 passes a wait for 0xfffffff0.
  uint32_t word = 5;
  ASSERT_EQ(hostcclStreamWaitValue32(s, &word, 0xfffffff0u), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  uint32_t low = 0xfffffff0u;
  ASSERT_EQ(hostcclStreamWaitValue32(s, &low, 5), ncclSuccess);
  EXPECT_EQ(hostcclStreamQuery(s), ncclInProgress);
  __atomic_store_n(&low, 5u, __ATOMIC_RELEASE);
  ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  hostcclStreamDestroy(s);
}

TEST(HostcclStream, StreamsRunConcurrently) {
  // Stream a waits on a gate that only stream b opens: serial execution of
  // the two streams would never finish.
  cudaStream_t a, b;
  ASSERT_EQ(hostcclStreamCreate(&a), ncclSuccess);
  ASSERT_EQ(hostcclStreamCreate(&b), ncclSuccess);
  uint32_t gate = 0;
  ASSERT_EQ(hostcclStreamWaitValue32(a, &gate, 1), ncclSuccess);
  ASSERT_EQ(hostcclStreamCompute(b, 100), ncclSuccess);
  ASSERT_EQ(hostcclLaunchHostFunc(b, OpenGate, &gate), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(a), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(b), ncclSuccess);
  hostcclStreamDestroy(a);
  hostcclStreamDestroy(b);
}

TEST(HostcclStream, EventsOrderWorkAcrossStreams) {
  cudaStream_t a, b;
  cudaEvent_t e;
  ASSERT_EQ(hostcclStreamCreate(&a), ncclSuccess);
  ASSERT_EQ(hostcclStreamCreate(&b), ncclSuccess);
  ASSERT_EQ(hostcclEventCreate(&e), ncclSuccess);
  EXPECT_EQ(hostcclEventQuery(e), ncclSuccess) << "an event never recorded is complete";
  uint32_t gate = 0;
  Log log;
  Step first{&log, 1}, second{&log, 2};
  ASSERT_EQ(hostcclStreamWaitValue32(a, &gate, 1), ncclSuccess);
  ASSERT_EQ(hostcclLaunchHostFunc(a, Append, &first), ncclSuccess);
  ASSERT_EQ(hostcclEventRecord(e, a), ncclSuccess);
  ASSERT_EQ(hostcclStreamWaitEvent(b, e), ncclSuccess);
  ASSERT_EQ(hostcclLaunchHostFunc(b, Append, &second), ncclSuccess);
  EXPECT_EQ(hostcclEventQuery(e), ncclInProgress);
  EXPECT_EQ(hostcclStreamQuery(b), ncclInProgress);
  __atomic_store_n(&gate, 1u, __ATOMIC_RELEASE);
  ASSERT_EQ(hostcclEventSynchronize(e), ncclSuccess);
  EXPECT_EQ(hostcclEventQuery(e), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(b), ncclSuccess);
  EXPECT_EQ(log.order, (std::vector<int>{1, 2}));
  EXPECT_EQ(hostcclEventDestroy(e), ncclSuccess);
  hostcclStreamDestroy(a);
  hostcclStreamDestroy(b);
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void Sleep30Ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

TEST(HostcclStream, ComputeStartsWhenTheWorkBeforeItEnds) {
  // Enqueued at once, the compute still waits for the host function ahead
  // of it: its device clock starts at the later of the two.
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(hostcclLaunchHostFunc(s, Sleep30Ms, nullptr), ncclSuccess);
  ASSERT_EQ(hostcclStreamCompute(s, 20000), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  EXPECT_GE(MsSince(t0), 50.0);
  hostcclStreamDestroy(s);
}

TEST(HostcclStream, WaitedEventHoldsLaterComputeThroughTheApi) {
  // A: 30 ms, E; B: wait E, 30 ms, F. B's compute, enqueued at once, cannot
  // start before A's ends (the exact clock is checked in HostcclDeviceClock below).
  cudaStream_t a, b;
  cudaEvent_t e, f;
  ASSERT_EQ(hostcclStreamCreate(&a), ncclSuccess);
  ASSERT_EQ(hostcclStreamCreate(&b), ncclSuccess);
  ASSERT_EQ(hostcclEventCreate(&e), ncclSuccess);
  ASSERT_EQ(hostcclEventCreate(&f), ncclSuccess);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(hostcclStreamCompute(a, 30000), ncclSuccess);
  ASSERT_EQ(hostcclEventRecord(e, a), ncclSuccess);
  ASSERT_EQ(hostcclStreamWaitEvent(b, e), ncclSuccess);
  ASSERT_EQ(hostcclStreamCompute(b, 30000), ncclSuccess);
  ASSERT_EQ(hostcclEventRecord(f, b), ncclSuccess);
  ASSERT_EQ(hostcclEventSynchronize(f), ncclSuccess);
  EXPECT_GE(MsSince(t0), 60.0);
  EXPECT_EQ(hostcclEventQuery(e), ncclSuccess);
  hostcclEventDestroy(e);
  hostcclEventDestroy(f);
  hostcclStreamDestroy(a);
  hostcclStreamDestroy(b);
}

TEST(HostcclStream, DefaultStreamIsNull) {
  Log log;
  Step s{&log, 3};
  ASSERT_EQ(hostcclLaunchHostFunc(nullptr, Append, &s), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(nullptr), ncclSuccess);
  EXPECT_EQ(log.order, std::vector<int>{3});
  EXPECT_EQ(hostcclStreamDestroy(nullptr), ncclInvalidArgument);
}

TEST(HostcclStream, DestroyReturnsAtOnceAndPendingWorkStillRuns) {
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  uint32_t gate = 0, done = 0;
  ASSERT_EQ(hostcclStreamWaitValue32(s, &gate, 1), ncclSuccess);
  ASSERT_EQ(hostcclLaunchHostFunc(s, OpenGate, &done), ncclSuccess);
  ASSERT_EQ(hostcclStreamDestroy(s), ncclSuccess);
  EXPECT_EQ(hostcclStreamQuery(s), ncclInvalidArgument) << "destroyed handle";
  __atomic_store_n(&gate, 1u, __ATOMIC_RELEASE);
  // The drained worker runs the host function; wait for it on the default stream.
  cudaStream_t watcher;
  ASSERT_EQ(hostcclStreamCreate(&watcher), ncclSuccess);
  ASSERT_EQ(hostcclStreamWaitValue32(watcher, &done, 1), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(watcher), ncclSuccess);
  hostcclStreamDestroy(watcher);
}

TEST(HostcclStream, HundredsOfStreams) {
  std::vector<cudaStream_t> streams(500);
  std::atomic<int> ran{0};
  auto bump = [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); };
  for (auto& s : streams) ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  for (size_t i = 0; i < streams.size(); i += 2) ASSERT_EQ(hostcclLaunchHostFunc(streams[i], bump, &ran), ncclSuccess);
  for (auto& s : streams) ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  EXPECT_EQ(ran.load(), 250);
  for (auto& s : streams) ASSERT_EQ(hostcclStreamDestroy(s), ncclSuccess);
}

TEST(HostcclStream, RejectsForeignHandlesAndNullArguments) {
  int not_a_stream = 0;
  auto* fake = reinterpret_cast<cudaStream_t>(&not_a_stream);
  EXPECT_EQ(hostcclStreamSynchronize(fake), ncclInvalidArgument);
  EXPECT_EQ(hostcclStreamCompute(fake, 1), ncclInvalidArgument);
  EXPECT_EQ(hostcclStreamCreate(nullptr), ncclInvalidArgument);
  EXPECT_EQ(hostcclEventCreate(nullptr), ncclInvalidArgument);
  EXPECT_EQ(hostcclEventQuery(reinterpret_cast<cudaEvent_t>(&not_a_stream)), ncclInvalidArgument);
  EXPECT_EQ(hostcclStreamWaitValue32(nullptr, nullptr, 1), ncclInvalidArgument);
  EXPECT_EQ(hostcclLaunchHostFunc(nullptr, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(hostcclLaunchKernelFunc(nullptr, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(hostcclLaunchKernelFunc(fake, Append, nullptr), ncclInvalidArgument);
}

TEST(HostcclStream, KernelFuncsRunInOrderWithHostFuncsAndCompute) {
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  Log log;
  std::vector<Step> steps;
  for (int i = 0; i < 40; ++i) steps.push_back(Step{&log, i});
  for (int i = 0; i < 40; ++i) {
    if (i % 10 == 0) {
      ASSERT_EQ(hostcclStreamCompute(s, 50), ncclSuccess);
    }
    auto launch = i % 2 == 0 ? hostcclLaunchKernelFunc : hostcclLaunchHostFunc;
    ASSERT_EQ(launch(s, Append, &steps[i]), ncclSuccess);
  }
  ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  ASSERT_EQ(log.order.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(log.order[i], i);
  EXPECT_EQ(hostcclStreamDestroy(s), ncclSuccess);
}

// The device clock across events, on the classes (not the C API): every
// stream below starts behind a closed gate, so all work is enqueued before
// any runs and each compute's start is fixed by the clock alone.
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int64_t Ns(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

// Waits for `event` and returns the clock end of its point.
Clock::time_point ClockAt(const HostEvent& event) {
  event.Wait();
  std::optional<Clock::time_point> end = event.Recorded().mark->End();
  EXPECT_TRUE(end.has_value()) << "a reached point has a clock end";
  return end.value_or(Clock::time_point());
}

std::shared_ptr<HostStream> GatedStream(uint32_t* gate) {
  auto stream = std::make_shared<HostStream>();
  EnqueueWaitValue32(*stream, gate, 1);
  return stream;
}

void Open(uint32_t* gate) { __atomic_store_n(gate, 1u, __ATOMIC_RELEASE); }

void CloseAll(std::initializer_list<std::shared_ptr<HostStream>> streams) {
  for (const auto& s : streams) s->Close();
}

TEST(HostcclDeviceClock, BackToBackComputeKeepsTheClockWhateverTheWakeUps) {
  // 2000 kernels of 10 us are 20 ms of device time, exactly: a worker that
  // wakes late for one kernel (tens of us each on a loaded machine) makes
  // it up on the kernels after it instead of adding its overshoot.
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  HostEvent start, end;
  start.Record(a);
  for (int i = 0; i < 2000; ++i) a->EnqueueCompute(std::chrono::microseconds(10));
  end.Record(a);
  Open(&gate);
  const Clock::time_point at_start = ClockAt(start);
  EXPECT_EQ(Ns(ClockAt(end) - at_start), Ns(milliseconds(20)));
  EXPECT_GE(Clock::now(), at_start + milliseconds(20)) << "the stream reached the end no earlier than its clock";
  CloseAll({a});
}

TEST(HostcclDeviceClock, ComputeAfterAWaitStartsAtTheEventsClock) {
  // B's worker wakes some time after A reached E; its compute must still
  // start exactly at A's clock at E (before the fix it started at the
  // wake-up, so F came out later than E + 30 ms).
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  auto b = std::make_shared<HostStream>();
  a->EnqueueCompute(milliseconds(30));
  HostEvent e, f;
  e.Record(a);
  ASSERT_NE(b->EnqueueWaitEvent(e), 0u);
  b->EnqueueCompute(milliseconds(30));
  f.Record(b);
  Clock::time_point opened = Clock::now();
  Open(&gate);
  Clock::time_point at_e = ClockAt(e);
  EXPECT_GE(at_e, opened + milliseconds(30));
  EXPECT_EQ(Ns(ClockAt(f) - at_e), Ns(milliseconds(30)));
  CloseAll({a, b});
}

TEST(HostcclDeviceClock, EventAfterNonComputeWorkCarriesItsRealEnd) {
  // Work that is not compute (a collective, a host function) has no
  // computed end: the clock at the event is when it really returned.
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  auto b = std::make_shared<HostStream>();
  Clock::time_point returned;
  a->Enqueue([&returned] {
    std::this_thread::sleep_for(milliseconds(10));
    returned = Clock::now();
  });
  HostEvent e, f;
  e.Record(a);
  ASSERT_NE(b->EnqueueWaitEvent(e), 0u);
  b->EnqueueCompute(milliseconds(20));
  f.Record(b);
  Open(&gate);
  Clock::time_point at_e = ClockAt(e);
  EXPECT_GE(at_e, returned);
  EXPECT_LE(at_e, Clock::now());
  EXPECT_EQ(Ns(ClockAt(f) - at_e), Ns(milliseconds(20)));
  CloseAll({a, b});
}

TEST(HostcclDeviceClock, AKernelFuncTakesNoDeviceTime) {
  // A function standing for a kernel whose time a compute models: the 5 ms
  // it takes on the host are not on the clock (a host function's would be).
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  HostEvent start, end;
  a->EnqueueCompute(milliseconds(10));
  start.Record(a);
  bool ran = false;
  a->EnqueueKernelFunc([&ran] {
    std::this_thread::sleep_for(milliseconds(5));
    ran = true;
  });
  a->EnqueueCompute(milliseconds(10));
  end.Record(a);
  Open(&gate);
  EXPECT_EQ(Ns(ClockAt(end) - ClockAt(start)), Ns(milliseconds(10)));
  EXPECT_TRUE(ran);
  CloseAll({a});
}

TEST(HostcclDeviceClock, AClockedTaskEndsWhereItSaysButNotBeforeItStarts) {
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  HostEvent before, after_later, after_earlier, after_real;
  a->EnqueueCompute(milliseconds(10));
  before.Record(a);
  std::optional<Clock::time_point> started;
  a->EnqueueClocked([&started](Clock::time_point start) -> std::optional<Clock::time_point> {
    started = start;
    return start + milliseconds(3);
  });
  after_later.Record(a);
  a->EnqueueClocked([](Clock::time_point start) -> std::optional<Clock::time_point> {
    return start - milliseconds(50);
  });
  after_earlier.Record(a);
  Clock::time_point returned;
  a->EnqueueClocked([&returned](Clock::time_point) -> std::optional<Clock::time_point> {
    std::this_thread::sleep_for(milliseconds(2));
    returned = Clock::now();
    return std::nullopt;
  });
  after_real.Record(a);
  Open(&gate);
  // Every task has run once the last point is reached.
  const Clock::time_point at_real = ClockAt(after_real);
  const Clock::time_point at_before = ClockAt(before);
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(Ns(*started - at_before), 0) << "it starts where the compute before it ended";
  EXPECT_EQ(Ns(ClockAt(after_later) - at_before), Ns(milliseconds(3)));
  EXPECT_EQ(ClockAt(after_earlier), ClockAt(after_later)) << "an end before the start is the start";
  EXPECT_GE(at_real, returned) << "nullopt: the real time it returned";
  CloseAll({a});
}

TEST(HostcclDeviceClock, EventsWithoutWorkDoNotConstrainTheClock) {
  HostEvent never;
  EXPECT_TRUE(never.Complete());
  auto b = std::make_shared<HostStream>();
  EXPECT_EQ(b->EnqueueWaitEvent(never), 0u) << "nothing to wait for";
  HostEvent f;
  Clock::time_point before = Clock::now();
  b->EnqueueCompute(milliseconds(5));
  Clock::time_point after = Clock::now();
  f.Record(b);
  Clock::time_point at_f = ClockAt(f);
  EXPECT_GE(at_f, before + milliseconds(5));
  EXPECT_LE(at_f, after + milliseconds(5));

  // Recorded on a stream that never had work: complete, no clock, and a wait
  // on it leaves the waiting stream's clock where it was.
  auto empty = std::make_shared<HostStream>();
  HostEvent e0, g, h;
  e0.Record(empty);
  EXPECT_TRUE(e0.Complete());
  EXPECT_EQ(e0.Recorded().mark->ticket(), 0u);
  EXPECT_FALSE(e0.Recorded().mark->End().has_value());
  uint32_t gate = 0;
  auto c = GatedStream(&gate);
  c->EnqueueCompute(milliseconds(5));
  g.Record(c);
  ASSERT_NE(c->EnqueueWaitEvent(e0), 0u);
  c->EnqueueCompute(milliseconds(5));
  h.Record(c);
  Open(&gate);
  EXPECT_EQ(Ns(ClockAt(h) - ClockAt(g)), Ns(milliseconds(5)));
  CloseAll({b, empty, c});
}

TEST(HostcclDeviceClock, CrossesAChainOfStreams) {
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  auto b = std::make_shared<HostStream>();
  auto c = std::make_shared<HostStream>();
  HostEvent ea, eb, ec;
  a->EnqueueCompute(milliseconds(10));
  ea.Record(a);
  ASSERT_NE(b->EnqueueWaitEvent(ea), 0u);
  b->EnqueueCompute(milliseconds(10));
  eb.Record(b);
  ASSERT_NE(c->EnqueueWaitEvent(eb), 0u);
  c->EnqueueCompute(milliseconds(10));
  ec.Record(c);
  Open(&gate);
  Clock::time_point at_a = ClockAt(ea), at_b = ClockAt(eb), at_c = ClockAt(ec);
  EXPECT_EQ(Ns(at_b - at_a), Ns(milliseconds(10)));
  EXPECT_EQ(Ns(at_c - at_b), Ns(milliseconds(10)));
  CloseAll({a, b, c});
}

TEST(HostcclDeviceClock, TwoWaitsTakeTheLaterEvent) {
  // Waited in both orders: the earlier event must not pull the clock back.
  uint32_t gate_a = 0, gate_b = 0;
  auto a = GatedStream(&gate_a);
  auto b = GatedStream(&gate_b);
  auto c = std::make_shared<HostStream>();
  auto d = std::make_shared<HostStream>();
  HostEvent ea, eb, ec, ed;
  a->EnqueueCompute(milliseconds(10));
  ea.Record(a);
  b->EnqueueCompute(milliseconds(30));
  eb.Record(b);
  ASSERT_NE(c->EnqueueWaitEvent(eb), 0u);
  ASSERT_NE(c->EnqueueWaitEvent(ea), 0u);
  c->EnqueueCompute(milliseconds(10));
  ec.Record(c);
  ASSERT_NE(d->EnqueueWaitEvent(ea), 0u);
  ASSERT_NE(d->EnqueueWaitEvent(eb), 0u);
  d->EnqueueCompute(milliseconds(10));
  ed.Record(d);
  Open(&gate_a);
  Open(&gate_b);
  Clock::time_point later = std::max(ClockAt(ea), ClockAt(eb));
  EXPECT_EQ(Ns(ClockAt(ec) - later), Ns(milliseconds(10)));
  EXPECT_EQ(Ns(ClockAt(ed) - later), Ns(milliseconds(10)));
  CloseAll({a, b, c, d});
}

TEST(HostcclDeviceClock, WaitKeepsThePointRecordedWhenItWasEnqueued) {
  // cudaStreamWaitEvent captures the event's record at the call: recording
  // E again later on A does not move B's wait.
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  auto b = std::make_shared<HostStream>();
  HostEvent e, f;
  a->EnqueueCompute(milliseconds(10));
  e.Record(a);
  std::shared_ptr<const trirace::hostccl::ClockMark> first = e.Recorded().mark;
  ASSERT_NE(b->EnqueueWaitEvent(e), 0u);
  a->EnqueueCompute(milliseconds(30));
  e.Record(a);
  b->EnqueueCompute(milliseconds(10));
  f.Record(b);
  Open(&gate);
  Clock::time_point at_f = ClockAt(f);
  ASSERT_TRUE(first->End().has_value());
  EXPECT_EQ(Ns(at_f - *first->End()), Ns(milliseconds(10)));
  EXPECT_EQ(Ns(ClockAt(e) - *first->End()), Ns(milliseconds(30)));
  CloseAll({a, b});
}

TEST(HostcclDeviceClock, MarksOfOnePointAgree) {
  // Two records of one pending point share a mark; a record of a point
  // already reached gets its clock end at once.
  uint32_t gate = 0;
  auto a = GatedStream(&gate);
  a->EnqueueCompute(milliseconds(5));
  HostEvent e1, e2, e3;
  e1.Record(a);
  e2.Record(a);
  EXPECT_EQ(e1.Recorded().mark, e2.Recorded().mark);
  EXPECT_FALSE(e1.Recorded().mark->End().has_value()) << "not reached yet";
  Open(&gate);
  Clock::time_point at_1 = ClockAt(e1);
  e3.Record(a);
  EXPECT_EQ(e3.Recorded().mark->ticket(), e1.Recorded().mark->ticket());
  ASSERT_TRUE(e3.Recorded().mark->End().has_value());
  EXPECT_EQ(Ns(*e3.Recorded().mark->End() - at_1), 0);
  a->Close();
}

}  // namespace
