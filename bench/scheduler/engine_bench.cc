// Host cost of the scheduler engine and the CPU use of its thread.
//
//   BM_SubmitComplete/<policy>   one Submit (gate opened inline) + one
//                                Complete on the calling thread, per task.
//   BM_EngineThreadCpu/<case>    tasks arrive at 1000/s for 2 s and finish
//                                200 us after release; reports the engine
//                                thread's CPU time per second of wall time
//                                (cpu_us_per_s; 1e6 = one full core) and
//                                wake-ups per second.
// Figures are printed, never asserted; docs/scheduler.md records them.
#include <benchmark/benchmark.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/engine.h"
#include "scheduler/fifo_policy.h"
#include "scheduler/priority_policy.h"
#include "scheduler/trirace_policy.h"

namespace trirace::sched {
namespace {

class NullOpener : public GateOpener {
 public:
  void OpenGate(const ReleasedTask&) override { opened.fetch_add(1, std::memory_order_relaxed); }
  std::atomic<uint64_t> opened{0};
};

std::unique_ptr<Policy> MakeNamed(int which) {
  switch (which) {
    case 0: return std::make_unique<FifoPolicy>();
    case 1: return std::make_unique<PriorityPolicy>();
    default: return std::make_unique<TriracePolicy>();
  }
}
const char* kNames[] = {"fifo", "priority", "trirace"};

void BM_SubmitComplete(benchmark::State& state) {
  NullOpener opener;
  Engine engine(MakeNamed(static_cast<int>(state.range(0))), &opener);
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 12.5e9});
  TaskSpec spec{.comm = 1, .traffic_class = TrafficClass::kDense, .bytes = 1 << 20, .links = {nic}};
  for (auto _ : state) {
    const TaskId id = engine.Submit(spec);
    benchmark::DoNotOptimize(engine.Complete(id));
  }
  state.SetLabel(kNames[state.range(0)]);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SubmitComplete)->Arg(0)->Arg(1)->Arg(2);

// Submit of a DENSE task that the trirace policy holds (P2P active, no
// credit), with range(0) tasks already held: the cost of a policy pass over
// the queue. The queue grows by one per iteration (100 iterations).
void BM_SubmitHeld(benchmark::State& state) {
  NullOpener opener;
  EngineOptions o;
  o.max_hold_ns = 3'600'000'000'000;  // nothing expires during the run
  TriracePolicyConfig c;
  c.dense_credit_bytes = 0;
  Engine engine(std::make_unique<TriracePolicy>(c), &opener, o);
  const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 12.5e9});
  engine.Submit({.comm = 1u << 30, .traffic_class = TrafficClass::kP2P, .bytes = 1, .links = {nic}, .gated = false});
  TaskSpec spec{.comm = 0, .traffic_class = TrafficClass::kDense, .bytes = 1 << 20, .links = {nic}};
  CommId comm = 0;
  for (int64_t i = 0; i < state.range(0); ++i) {
    spec.comm = comm++;
    engine.Submit(spec);
  }
  for (auto _ : state) {
    spec.comm = comm++;
    benchmark::DoNotOptimize(engine.Submit(spec));
  }
  if (opener.opened.load() != 0) state.SkipWithError("a held task was released");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SubmitHeld)->Arg(0)->Arg(16)->Arg(256)->Iterations(100);

// Completes tasks a fixed time after their release, as a device would.
class DelayPoller : public CompletionPoller, public GateOpener {
 public:
  explicit DelayPoller(int64_t run_ns) : run_ns_(run_ns) {}
  void OpenGate(const ReleasedTask& t) override {
    absl::MutexLock lock(&mu_);
    running_.push_back({t.id, MonotonicNs() + run_ns_});
  }
  void PollCompletions(std::vector<TaskId>* done) override {
    const int64_t now = MonotonicNs();
    absl::MutexLock lock(&mu_);
    while (!running_.empty() && running_.front().second <= now) {
      done->push_back(running_.front().first);
      running_.pop_front();
    }
  }

 private:
  const int64_t run_ns_;
  absl::Mutex mu_;
  std::deque<std::pair<TaskId, int64_t>> running_ ABSL_GUARDED_BY(mu_);
};

// range(0): 0 = fifo, every task released at once; 1 = trirace with P2P
// traffic alongside, so DENSE tasks are held and released by completions
// and timers.
void BM_EngineThreadCpu(benchmark::State& state) {
  const bool mixed = state.range(0) == 1;
  for (auto _ : state) {
    DelayPoller device(200'000);
    TriracePolicyConfig c;
    c.dense_credit_bytes = 0;
    c.dense_window_bytes = 1 << 20;
    std::unique_ptr<Policy> policy =
        mixed ? std::unique_ptr<Policy>(std::make_unique<TriracePolicy>(c)) : std::make_unique<FifoPolicy>();
    Engine engine(std::move(policy), &device);
    engine.SetCompletionPoller(&device);
    const LinkId nic = engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 12.5e9});
    const EngineStats before = engine.stats();
    const auto start = std::chrono::steady_clock::now();
    const auto period = std::chrono::microseconds(1000);
    constexpr int kTasks = 2000;
    for (int i = 0; i < kTasks; ++i) {
      std::this_thread::sleep_until(start + i * period);
      const bool p2p = mixed && i % 4 == 0;
      engine.Submit({.comm = p2p ? 1u : 2u + i % 3,
                     .traffic_class = p2p ? TrafficClass::kP2P : TrafficClass::kDense,
                     .bytes = 1 << 20,
                     .links = {nic}});
    }
    while (engine.running_count() + engine.pending_count() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const EngineStats after = engine.stats();
    state.counters["cpu_us_per_s"] = static_cast<double>(after.thread_cpu_ns - before.thread_cpu_ns) / 1e3 / wall_s;
    state.counters["wakeups_per_s"] = static_cast<double>(after.wakeups - before.wakeups) / wall_s;
    state.counters["polls_per_s"] = static_cast<double>(after.polls - before.polls) / wall_s;
    state.counters["tasks_per_s"] = kTasks / wall_s;
    state.counters["longest_hold_us"] = static_cast<double>(after.longest_hold_ns) / 1e3;
    state.counters["held_to_bound"] = static_cast<double>(after.held_to_bound);
  }
  state.SetLabel(mixed ? "trirace, 1/4 P2P" : "fifo");
}
BENCHMARK(BM_EngineThreadCpu)->Arg(0)->Arg(1)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// The idle engine thread: no tasks for 1 s.
void BM_EngineThreadIdle(benchmark::State& state) {
  for (auto _ : state) {
    NullOpener opener;
    Engine engine(std::make_unique<TriracePolicy>(), &opener);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const EngineStats st = engine.stats();
    state.counters["cpu_us_per_s"] = static_cast<double>(st.thread_cpu_ns) / 1e3;
    state.counters["wakeups_per_s"] = static_cast<double>(st.wakeups);
  }
}
BENCHMARK(BM_EngineThreadIdle)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trirace::sched

BENCHMARK_MAIN();
