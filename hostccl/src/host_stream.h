// Host streams and events: the execution model behind hostccl/stream.h.
//
// A HostStream is a FIFO of tasks run by one worker thread, started on the
// first enqueue. Each task gets a ticket (1, 2, ...); the stream counts the
// tickets that have completed, so "has the work before point t run?" is one
// comparison. Events are therefore just a captured (stream, ticket) pair:
// recording an event enqueues nothing.
//
// Lifetime: handles given to callers are raw pointers registered in a
// process-wide table (Lookup validates them). Destroying a stream removes the
// handle and closes the stream; the worker keeps its own reference, finishes
// what was enqueued and then exits by itself (cudaStreamDestroy returns at
// once as well), so no thread ever waits for a stream that is blocked on a
// closed gate.
//
// Emulated compute (EnqueueCompute) keeps a device clock, as a GPU runs
// kernels: a compute task starts when it was enqueued or when the task before
// it ended, whichever is later, not when the worker thread happens to wake.
// So sleep overshoot and hand-off latency do not add up along a chain of
// kernels; a compute whose clock end has already passed returns at once.
// A task's end on the clock is its computed end for a compute, what it says
// for a ClockedTask (hostccl's send/receive over shared memory: the hop
// takes no device time), and the real time it returned for any other task
// (a collective, a host function, a gate); never earlier than the clock end
// of the task before it.
//
// The clock crosses events. Recording an event captures a ClockMark: the
// ticket and, once the stream reaches it, the clock end of the work up to it.
// A wait on the event (EnqueueWaitEvent) takes no device time: it ends at the
// later of its own stream's previous end and the mark's clock end, so a
// compute after it starts as on a GPU, when the recorded work ended, however
// late the waiting worker wakes.
//
// Thread safety: every member is thread-safe.
#ifndef TRIRACE_HOSTCCL_SRC_HOST_STREAM_H_
#define TRIRACE_HOSTCCL_SRC_HOST_STREAM_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include <cuda_runtime.h>

namespace trirace::hostccl {

class HostEvent;

// A point captured on a stream (HostStream::Mark): a ticket and the clock end
// of the stream's work up to it. The end is set once, by the stream's worker
// when it reaches the ticket (or at once when the point was already reached),
// and is read by any thread, typically another stream's worker after it saw
// the ticket reached. Thread-safe.
class ClockMark {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ClockMark(uint64_t ticket) : ticket_(ticket) {}
  ClockMark(const ClockMark&) = delete;
  ClockMark& operator=(const ClockMark&) = delete;

  uint64_t ticket() const { return ticket_; }
  // The clock end of the work up to ticket(): nullopt until the stream has
  // reached it, and always for ticket 0 (no work before it, no constraint).
  std::optional<Clock::time_point> End() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class HostStream;
  // Called by the stream with its own lock held (a mark never calls into a
  // stream, so the order is always stream, then mark).
  void Set(Clock::time_point end) ABSL_LOCKS_EXCLUDED(mu_);

  const uint64_t ticket_;
  mutable absl::Mutex mu_;
  std::optional<Clock::time_point> end_ ABSL_GUARDED_BY(mu_);
};

class HostStream : public std::enable_shared_from_this<HostStream> {
 public:
  // steady_clock is CLOCK_MONOTONIC: its time_since_epoch() is comparable
  // across the processes of one host (common/clock.h's MonotonicNs).
  using Clock = std::chrono::steady_clock;
  using Task = absl::AnyInvocable<void() &&>;
  // A task that knows the device clock: called with the time it starts at
  // on the clock (the later of its enqueue time and the end of the task
  // before it); returns its end on the clock, or nullopt for the real time
  // it returned. An end before the start counts as the start.
  using ClockedTask = absl::AnyInvocable<std::optional<Clock::time_point>(Clock::time_point start) &&>;

  HostStream() = default;
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // Appends a task; returns its ticket. Tasks enqueued after Close() are
  // dropped (ticket 0).
  uint64_t Enqueue(Task task);
  // Appends a ClockedTask; returns its ticket like Enqueue.
  uint64_t EnqueueClocked(ClockedTask task);
  // Appends a task that takes no device time, as a kernel whose duration is
  // modelled by EnqueueCompute (hostcclLaunchKernelFunc).
  uint64_t EnqueueKernelFunc(Task task);
  // Appends emulated compute of `duration` (see the device clock above);
  // returns its ticket like Enqueue.
  uint64_t EnqueueCompute(std::chrono::microseconds duration);
  // Appends a wait for `event`'s point as recorded now (cudaStreamWaitEvent):
  // later work runs once the event's stream reached it, and the wait ends on
  // this stream's clock at the later of the task before it and the point's
  // clock end. Returns the wait's ticket; 0 when nothing was enqueued (event
  // never recorded, recorded on this stream, or the stream is closed).
  uint64_t EnqueueWaitEvent(const HostEvent& event);
  // The current end of the stream (its last ticket) as a mark whose clock end
  // the worker fills in when it gets there.
  std::shared_ptr<const ClockMark> Mark();
  // The ticket of the last task enqueued so far (0 when none).
  uint64_t LastTicket() const;
  // True once every task up to `ticket` has run.
  bool Reached(uint64_t ticket) const;
  // Blocks until Reached(ticket).
  void WaitReached(uint64_t ticket) const;
  // No more tasks are accepted; the worker exits once the queue is drained.
  void Close();

 private:
  void StartWorkerLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunWorker();
  // Runs on the worker: sleeps to the compute's clock end.
  void RunCompute(Clock::time_point enqueued, std::chrono::microseconds duration);

  mutable absl::Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool worker_started_ ABSL_GUARDED_BY(mu_) = false;
  // The clock end of ticket completed_ (nullopt before the first task): what
  // a mark of an already reached point gets. Written by the worker.
  std::optional<Clock::time_point> reached_end_ ABSL_GUARDED_BY(mu_);
  // Marks of points not reached yet, one per ticket, in ticket order; the
  // worker fills and drops each when it completes that ticket. Only events
  // keep a mark after that, so there is no history: this holds at most one
  // entry per queued task.
  std::deque<std::shared_ptr<ClockMark>> pending_marks_ ABSL_GUARDED_BY(mu_);
  // The device clock; touched by the worker thread only.
  Clock::time_point last_end_;                  // clock end of the previous task
  std::optional<Clock::time_point> clock_end_;  // set by a compute, a wait or a clocked task
};

// A recorded point on a stream. An event never recorded has no stream and
// counts as complete. Recording again replaces the point; waits enqueued
// before keep the point they captured.
class HostEvent {
 public:
  struct Point {
    std::shared_ptr<HostStream> stream;     // null: never recorded
    std::shared_ptr<const ClockMark> mark;  // ticket and clock end
  };

  void Record(std::shared_ptr<HostStream> stream);
  // The captured point.
  Point Recorded() const;
  bool Complete() const;
  void Wait() const;

 private:
  mutable absl::Mutex mu_;
  Point point_ ABSL_GUARDED_BY(mu_);
};

// Handle table. A NULL stream handle is the process's default stream.
cudaStream_t RegisterStream(std::shared_ptr<HostStream> stream);
// The stream behind `handle`; InvalidArgument naming `arg` when `handle` is
// not a live hostccl stream.
absl::StatusOr<std::shared_ptr<HostStream>> LookupStream(cudaStream_t handle, absl::string_view arg);
// Removes `handle` from the table and returns its stream.
absl::StatusOr<std::shared_ptr<HostStream>> UnregisterStream(cudaStream_t handle);

cudaEvent_t RegisterEvent(std::shared_ptr<HostEvent> event);
absl::StatusOr<std::shared_ptr<HostEvent>> LookupEvent(cudaEvent_t handle, absl::string_view arg);
absl::StatusOr<std::shared_ptr<HostEvent>> UnregisterEvent(cudaEvent_t handle);

// Enqueues the cyclic >= wait on `word` (see hostcclStreamWaitValue32). On
// the device clock it ends when the worker saw the word open: when the word
// was written is unknown, and a worker that arrives late may find open a
// gate that was closed when its stream got there on the clock.
void EnqueueWaitValue32(HostStream& stream, const volatile uint32_t* word, uint32_t value);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_HOST_STREAM_H_
