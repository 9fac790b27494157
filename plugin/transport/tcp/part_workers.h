// Progress threads that move the parts of striped messages over a comm's
// data sockets.
//
// Data socket i (0-based) belongs to thread i % nthreads. Each thread moves
// its parts one after the other, in the order they were queued, with
// blocking send/recv (MSG_WAITALL) on that part's socket: both ends queue
// the parts of a message together and in socket order, in the order of the
// frame headers on the control socket, so the two sides walk the same
// sequence and cannot wait on each other in a cycle. Threads start on the
// first queued part, so comms that only carry small messages cost no
// threads. When a part is complete its counter is decremented with release
// ordering; a caller that reads 0 with acquire ordering sees the bytes.
//
// The data sockets are switched to blocking mode with a short receive/send
// timeout, so a thread notices a stop request or a lost peer: a socket
// error, an EOF, or a part stalled for `timeout_ms` while the peer's host
// no longer answers (peer_liveness.h; a stopped but alive peer is waited
// for) reports the status once through `on_failure` and stops the
// threads. Destruction shuts the sockets down (unblocking the threads),
// joins them and drops queued parts, and logs (TRACE, NET) what share of
// its life each thread spent waiting for a part to be queued and moving
// parts: threads that mostly wait are fed too slowly by the caller (on an
// oversubscribed host, NCCL's proxy thread not getting a core).
//
// Thread safety: Enqueue may be called from any thread (not concurrently
// with destruction). mu_ guards the per-thread queues, the thread list and
// the stop flag; a thread waits on mu_ for its queue to fill or for stop,
// and holds no lock while it moves a part. stopping_ (the stop flag again,
// read inside the transfer loop without the lock) and failed_ are atomics.
#ifndef TRIRACE_PLUGIN_TRANSPORT_TCP_PART_WORKERS_H_
#define TRIRACE_PLUGIN_TRANSPORT_TCP_PART_WORKERS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace trirace::net::tcp {

struct PartTask {
  char* ptr = nullptr;
  uint64_t len = 0;
  std::atomic<int>* parts_left = nullptr;  // decremented when the part is moved
};

class PartWorkers {
 public:
  using FailureFn = std::function<void(absl::Status)>;

  // `fds` are the data sockets (borrowed: they must outlive this object).
  PartWorkers(std::vector<int> fds, int nthreads, bool sending, int timeout_ms,
              FailureFn on_failure);
  ~PartWorkers() ABSL_LOCKS_EXCLUDED(mu_);
  PartWorkers(const PartWorkers&) = delete;
  PartWorkers& operator=(const PartWorkers&) = delete;

  // Queues a part on data socket `socket` (0-based).
  absl::Status Enqueue(int socket, PartTask task) ABSL_LOCKS_EXCLUDED(mu_);
  int num_sockets() const { return static_cast<int>(fds_.size()); }

 private:
  struct Queued {
    int socket;
    PartTask task;
  };
  // Configures the data sockets and starts the threads (on the first part).
  absl::Status Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run(int thread_index) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status MovePart(const Queued& q) ABSL_LOCKS_EXCLUDED(mu_);
  void Fail(absl::Status status);

  // Written by its thread only; read after the threads are joined.
  struct ThreadStats {
    uint64_t parts = 0;
    int64_t waiting_ns = 0;  // for a part to be queued
    int64_t moving_ns = 0;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  void LogStats(const std::vector<ThreadStats>& stats) const;

  const std::vector<int> fds_;
  const int nthreads_;
  const bool sending_;
  const int timeout_ms_;
  FailureFn on_failure_;

  absl::Mutex mu_;
  // Per thread (sized once, by the constructor): the parts queued to it,
  // oldest first; the front one stays queued while it moves.
  std::vector<std::deque<Queued>> queues_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);  // empty until the first part
  std::vector<ThreadStats> stats_;  // one per thread (sized once, by the constructor)
  bool stop_ ABSL_GUARDED_BY(mu_) = false;  // the threads must exit; no more parts
  std::atomic<bool> stopping_{false};       // set after stop_, read without mu_
  std::atomic<bool> failed_{false};         // on_failure_ was called
};

}  // namespace trirace::net::tcp

#endif  // TRIRACE_PLUGIN_TRANSPORT_TCP_PART_WORKERS_H_
