// The scheduler engine: owns the tasks, asks the policy which gates to open,
// opens them through a callback, and guarantees every gate opens within the
// hold bound. It never calls NCCL or a device API.
//
// How a launcher uses it (one engine per process):
//
//   class Gates : public sched::GateOpener {           // the launcher's side
//     void OpenGate(const sched::ReleasedTask& t) override { gates_.Open(t.cookie); }
//   };
//   sched::Engine engine(std::make_unique<sched::TriracePolicy>(config), &gates,
//                        sched::EngineOptions::FromParams());
//   for (const topo::Link& l : system_links.LinksFrom(0)) engine.AddLink({l.name, l.gbps * 1e9 / 8});
//   engine.SetCompletionPoller(&launcher);              // or call Complete()
//   ...
//   // at call time, after the gate and the real NCCL call are on the stream:
//   sched::TaskId id = engine.Submit({.comm = c, .traffic_class = kDense,
//                                     .bytes = n, .links = links, .cookie = slot});
//   // when the op's completion event has fired:
//   engine.Complete(id);
//
// When the policy runs: on Submit, Complete, ReportOccupancy and
// BeginIteration (on the calling thread, so a release the policy grants at
// once costs no thread hand-off), and on the engine thread for timers the
// policy asks for, the hold bound, completion polling and occupancy
// sampling. A pass that released anything is repeated at once, so the next
// task of each comm is considered in the same round.
//
// Hold bound: a task held for hold_bound_ns() is released with reason
// kMaxHold by the engine itself, whatever the policy does, on the first pass
// at or after that time. The bound is max_hold_ns (TRIRACE_MAX_HOLD_US)
// until an iteration period is known, then the larger of max_hold_ns and
// max_hold_fraction (TRIRACE_MAX_HOLD_FRACTION) of the smoothed period: a
// share of the step, so that it means the same on slow and fast links. With the thread running (or
// Step() called at the time it returned) that pass happens at the bound.
//
// Online tuning (options.tuning, TRIRACE_TUNE; window_tuner.h): the engine
// feeds its tuner every change of link state and every completion, and on
// each pass applies what it decided to the links' window and credit factors
// (LinkState::window_scale / credit_scale, which the trirace policy
// multiplies its limits by) and tells the tuning listener.
//
// Engine thread and its CPU cost (adaptive waiting; never spins):
//   - nothing held or running: blocked on a condition variable, no wake-ups;
//   - tasks held: wakes at the policy's next timer, the hold bound and, with
//     an occupancy reader, every occupancy_period_ns (sampling only while
//     tasks are held);
//   - tasks running and a CompletionPoller set: polls every min_poll_ns
//     after activity, doubling on each quiet poll up to max_poll_ns. At most
//     1/min_poll_ns wake-ups per second while busy, 1/max_poll_ns when quiet
//     (defaults 20 us and 1 ms); a wake-up costs a few microseconds of CPU.
//     Measured figures: docs/scheduler.md (bench/scheduler).
//   Completion detection latency is therefore at most max_poll_ns after a
//   quiet period; a launcher that can push completions (hostccl host
//   functions) calls Complete() and needs no poller.
//
// Time: every time is on options.clock. With a ManualClock the engine runs in
// simulated time: construct with start_thread = false and call Step() (the
// simulator), or keep the thread and call Kick() after moving the clock.
//
// Files: engine.cc (the public calls), engine_tasks.cc (the task table),
// engine_pass.cc (the policy pass and the hold bound), engine_thread.cc (the
// thread, Step and wake-ups); link_table.h, occupancy_sampler.h and
// window_tuner.h hold the link bookkeeping, the occupancy input and the
// tuner.
//
// Thread safety: all public methods are thread-safe. GateOpener::OpenGate
// is called without the engine's lock held, exactly once per gated task,
// possibly from several threads at once for different tasks; it may call
// back into the engine, except Stop() (it may run on the engine thread).
#ifndef TRIRACE_SCHEDULER_ENGINE_H_
#define TRIRACE_SCHEDULER_ENGINE_H_

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "scheduler/link_spec.h"
#include "scheduler/link_table.h"
#include "scheduler/occupancy_reader.h"
#include "scheduler/occupancy_sampler.h"
#include "scheduler/policy.h"
#include "scheduler/task.h"
#include "scheduler/window_tuner.h"

namespace trirace::sched {

// What OpenGate receives.
struct ReleasedTask {
  TaskId id = 0;
  uint64_t cookie = 0;  // TaskSpec::cookie
  CommId comm = 0;
  TrafficClass traffic_class = TrafficClass::kOther;
  ReleaseReason reason = ReleaseReason::kFifo;
  int64_t enqueue_ns = 0;
  int64_t release_ns = 0;
  uint32_t chunk_index = 0;
};

class GateOpener {
 public:
  virtual ~GateOpener() = default;
  // Opens the gate of `task`. Must be quick and must not block.
  virtual void OpenGate(const ReleasedTask& task) = 0;
};

class CompletionPoller {
 public:
  virtual ~CompletionPoller() = default;
  // Appends the ids of tasks that completed since the last call. Called on
  // the engine thread (or Step()'s caller), one call at a time, without the
  // engine lock, only while some task is running.
  virtual void PollCompletions(std::vector<TaskId>* done) = 0;
};

struct EngineOptions {
  const Clock* clock = &RealClock::Get();  // must outlive the engine
  int64_t max_hold_ns = 5'000'000;         // 0: nothing is ever held
  double max_hold_fraction = 0;            // of the iteration period; 0: max_hold_ns alone
  bool start_thread = true;                // false: the caller drives Step()
  int64_t min_poll_ns = 20'000;
  int64_t max_poll_ns = 1'000'000;
  int64_t occupancy_period_ns = 2'000'000;
  // Online tuning of each link's DENSE window and credit (window_tuner.h);
  // off unless enabled.
  WindowTunerConfig tuning = {};
  // TRIRACE_MAX_HOLD_US, TRIRACE_MAX_HOLD_FRACTION, TRIRACE_OCCUPANCY_PERIOD_US,
  // TRIRACE_TUNE*; the rest as above.
  static EngineOptions FromParams();
};

struct EngineStats {
  uint64_t submitted = 0;
  uint64_t released = 0;     // gated tasks whose gate was opened
  uint64_t completed = 0;
  uint64_t held_to_bound = 0;  // released by the engine's hold bound
  uint64_t passes = 0;       // policy invocations
  uint64_t wakeups = 0;      // engine thread wake-ups
  uint64_t polls = 0;        // CompletionPoller calls
  uint64_t occupancy_samples = 0;
  uint64_t tuning_changes = 0;  // links whose window or credit the tuner changed
  int64_t longest_hold_ns = 0;  // max over released tasks of release - enqueue
  int64_t thread_cpu_ns = 0;    // CPU time of the engine thread so far
};

class Engine {
 public:
  // `policy` must not be null; `opener` must outlive the engine.
  Engine(std::unique_ptr<Policy> policy, GateOpener* opener, EngineOptions options = {});
  // Stop(), then frees everything.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Stops the thread and opens every gate still closed (reason kShutdown),
  // so no stream is left waiting. Later Submits are released at once.
  // Idempotent. Call it before freeing the gate memory OpenGate writes.
  void Stop();

  // Registers a link; ids are 0, 1, ... in call order.
  LinkId AddLink(const LinkSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  // Optional; may be set once, before or after tasks exist. Must outlive
  // the engine (or be replaced by nullptr first).
  void SetCompletionPoller(CompletionPoller* poller);
  // Optional: samples `reader` every occupancy_period_ns while tasks are
  // held; device_links maps a reader device name to the link it measures.
  void SetOccupancyReader(std::unique_ptr<OccupancyReader> reader,
                          std::vector<std::pair<std::string, LinkId>> device_links);

  // An id for a task not submitted yet, for launchers that must enqueue
  // the completion callback (the shim's stream watcher) before Submit: pass it
  // to Submit. Lock-free.
  TaskId ReserveId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  // Registers a task, under `reserved_id` (from ReserveId, used once) or a
  // new id when 0. A gated task may have its gate opened (OpenGate) before
  // Submit returns. Link ids not yet added with AddLink are dropped from
  // the task.
  TaskId Submit(TaskSpec spec, TaskId reserved_id = 0);
  // The task's work finished on the device; `started_ns` (engine clock) is
  // when the device began it, if the launcher knows (< 0: unknown; the
  // tuner then uses the release). NotFound for an unknown id,
  // FailedPrecondition for a task whose gate is still closed.
  absl::Status Complete(TaskId id, int64_t started_ns = -1);
  // A pushed occupancy sample for `link` (the simulator, tests): all traffic
  // measured and, if known (>= 0), this process's own part, in bytes/s.
  void ReportOccupancy(LinkId link, double measured_bytes_per_s, double ours_bytes_per_s = -1,
                       int64_t others_urgent_bytes = -1);
  // trirace_iteration_begin(): feeds IterationInfo (deadline rule).
  void BeginIteration(int64_t iteration);
  // Called for every change the tuner makes (options.tuning), with the
  // engine's lock held: it must be quick and must not call the engine.
  void SetTuningListener(std::function<void(const TuningChange&)> listener) ABSL_LOCKS_EXCLUDED(mu_);

  // Makes the engine thread re-read the clock now (after a ManualClock moved).
  void Kick();
  // One pass on the calling thread: polls completions, samples occupancy if
  // due, runs the policy, applies the hold bound. Returns the clock time at
  // which the next Step is wanted (kNeverNs: none until something changes).
  int64_t Step();
  // The clock time the next Step() is wanted at, as Step() would return it
  // now (kNeverNs: none until something changes). For a caller that drives
  // the engine (the simulator) after Submit, Complete or BeginIteration,
  // which run their pass on the calling thread and return nothing of it.
  int64_t WantedWakeNs() const ABSL_LOCKS_EXCLUDED(mu_);

  EngineStats stats() const;
  size_t pending_count() const;
  size_t running_count() const;
  std::string_view policy_name() const { return policy_->name(); }
  const EngineOptions& options() const { return options_; }
  // The hold bound now (see the header comment). Lock-free.
  int64_t hold_bound_ns() const { return hold_bound_ns_.load(std::memory_order_relaxed); }

 private:
  // The sequence every public change follows (engine.cc): lock, `change`
  // at the clock's now (it may append releases; false skips the pass),
  // a policy pass on the calling thread unless stopped, wake the engine
  // thread if it would now sleep too long, unlock, open what was released.
  // `change` runs with mu_ held (a lambda's body is not checked by the
  // thread-safety analysis, so the callers annotate what they touch).
  void ChangeThenPass(absl::FunctionRef<bool(int64_t now, std::vector<ReleasedTask>* released)> change)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The task table (engine_tasks.cc).
  Task* AddTaskLocked(TaskId id, TaskSpec spec, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseLocked(Task* task, ReleaseReason reason, int64_t now, std::vector<ReleasedTask>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CompleteLocked(TaskId id, int64_t now, int64_t started_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The tuner (engine_pass.cc): integrate the link state up to `now`
  // (before a change), and apply what it decides on a pass.
  void ObserveLinksLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TuneLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The policy pass and the hold bound at `now` (engine_pass.cc); appends
  // what to open to `out`.
  void PassLocked(int64_t now, std::vector<ReleasedTask>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The engine thread and its wake-ups (engine_thread.cc).
  void ThreadMain() ABSL_LOCKS_EXCLUDED(mu_, step_mu_);
  // The clock time the engine thread must wake by, given the current state.
  int64_t WantedWakeLocked(int64_t now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a caller-thread pass: wakes the engine thread if it sleeps too long.
  void MaybeWakeThreadLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void Open(const std::vector<ReleasedTask>& released) ABSL_LOCKS_EXCLUDED(mu_);

  const EngineOptions options_;
  const std::unique_ptr<Policy> policy_;  // Decide/OnTaskDone under mu_
  GateOpener* const opener_;

  // One Step() at a time; the occupancy reader is used only under it.
  // Lock order: step_mu_ before mu_.
  absl::Mutex step_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  OccupancySampler sampler_ ABSL_GUARDED_BY(step_mu_);

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // the engine thread sleeps on it, with mu_
  std::unordered_map<TaskId, std::unique_ptr<Task>> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<const Task*> pending_ ABSL_GUARDED_BY(mu_);  // submission order
  std::vector<const Task*> running_ ABSL_GUARDED_BY(mu_);  // release order
  // Per comm, its held tasks in submission order.
  std::unordered_map<CommId, std::deque<Task*>> comm_pending_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<CommId, uint64_t> comm_seq_ ABSL_GUARDED_BY(mu_);
  LinkTable links_ ABSL_GUARDED_BY(mu_);
  IterationInfo iteration_ ABSL_GUARDED_BY(mu_);
  WindowTuner tuner_ ABSL_GUARDED_BY(mu_);
  std::function<void(const TuningChange&)> tuning_listener_ ABSL_GUARDED_BY(mu_);
  std::vector<TuningChange> tuning_changes_ ABSL_GUARDED_BY(mu_);  // reused
  Decision decision_ ABSL_GUARDED_BY(mu_);
  CompletionPoller* poller_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool sampling_ ABSL_GUARDED_BY(mu_) = false;  // an occupancy reader is set
  int64_t next_sample_ns_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<TaskId> next_id_{1};
  std::atomic<int64_t> hold_bound_ns_;  // written under mu_
  uint64_t submit_seq_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t policy_wake_ns_ ABSL_GUARDED_BY(mu_) = kNeverNs;
  int64_t poll_interval_ns_ ABSL_GUARDED_BY(mu_);
  bool activity_ ABSL_GUARDED_BY(mu_) = false;  // something happened since the last Step
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool thread_awake_ ABSL_GUARDED_BY(mu_) = true;  // between wake-up and going to sleep
  int64_t sleeping_until_ns_ ABSL_GUARDED_BY(mu_) = kNeverNs;
  EngineStats stats_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
  pthread_t thread_handle_{};
  bool have_thread_ = false;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_ENGINE_H_
