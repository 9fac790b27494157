// The host stream API (hostccl/stream.h): ordering, concurrency, events,
// gates, queries and handle checks.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include <hostccl/stream.h>

namespace {

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

TEST(HostcclStream, BackToBackComputeKeepsTheDeviceClock) {
  // 2000 kernels of 10 us are 20 ms of device time. Sleeping each from the
  // moment the worker wakes would add every wake-up's overshoot (tens of us
  // each, 100+ ms in all); on the device clock a late wake-up is made up by
  // the kernels after it. The bound leaves 50 ms for a loaded machine.
  cudaStream_t s;
  ASSERT_EQ(hostcclStreamCreate(&s), ncclSuccess);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(hostcclStreamCompute(s, 10), ncclSuccess);
  ASSERT_EQ(hostcclStreamSynchronize(s), ncclSuccess);
  double ms = MsSince(t0);
  EXPECT_GE(ms, 20.0);
  EXPECT_LT(ms, 70.0);
  hostcclStreamDestroy(s);
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
}

}  // namespace
