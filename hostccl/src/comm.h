// CommCore: one rank of a hostccl communicator, and the ncclComm handle.
//
// Life cycle: the handle exists as soon as ncclCommInitRank* returns (for a
// nonblocking comm, while Init still runs on a helper thread; AsyncState()
// is ncclInProgress until it finishes). Init runs the bootstrap rendezvous,
// connects the net plugin links and starts the executor.
//
// Execution: every NCCL call becomes a Launch (one per communicator per
// group) submitted to the executor, a thread that runs launches strictly in
// submission order, which is the order NCCL requires all ranks to use. A
// launch first waits until every stream it was enqueued on has reached it
// (Arrive), then runs its collectives in order and its send/receives
// together, then signals `done`; the streams wait for that before running
// later work. One launch runs at a time. When the only stream of a launch
// reaches it while it is next and nothing runs, that stream's thread runs
// it itself (ArriveAndRun): two thread hand-offs fewer per operation, the
// same order. A failed launch sets the asynchronous error; later launches
// then fail at once (the API layer rejects new calls with that error).
//
// Abort raises a flag every data-mover loop checks, fails queued launches, stops
// the executor and closes the links: it returns promptly even when an
// operation is in flight or a peer is gone.
//
// Thread safety: every public member is thread-safe. NCCL's rule that one
// communicator is driven by one thread at a time still applies to the API.
#ifndef TRIRACE_HOSTCCL_SRC_COMM_H_
#define TRIRACE_HOSTCCL_SRC_COMM_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "hostccl/src/algorithms.h"
#include "hostccl/src/data_mover.h"
#include "hostccl/src/host_stream.h"
#include "hostccl/src/peer_links.h"
#include "nccl.h"

namespace trirace::hostccl {

class CommCore;

struct CommConfig {
  bool blocking = true;
  int traffic_class = -1;
  std::string name;
  int device = 0;
};

// The work one group gives one communicator.
struct Launch {
  std::shared_ptr<CommCore> core;
  std::vector<OpDesc> colls;  // in call order
  std::vector<OpDesc> p2p;    // run together after the collectives
  int pending_streams = 0;    // guarded by the core's mutex
  // Set before submission: the launch was enqueued on exactly one stream.
  bool one_stream = false;
  // The device clock (HostStream::ClockedTask, in CLOCK_MONOTONIC ns): the
  // time its stream reached it, set by that stream before it arrives; and
  // the end the links report for a launch of sends and receives alone,
  // set by whoever runs it before `done` (PeerLinks::ClockEnd).
  std::optional<int64_t> clock_start_ns;
  std::optional<int64_t> clock_end_ns;
  ncclResult_t result = ncclSuccess;
  absl::Notification done;
};

class CommCore : public std::enable_shared_from_this<CommCore> {
 public:
  CommCore(int nranks, int rank, CommConfig config);
  ~CommCore();
  CommCore(const CommCore&) = delete;
  CommCore& operator=(const CommCore&) = delete;

  // Rendezvous, connections, executor. Sets AsyncState() to ncclSuccess or
  // to the error.
  absl::Status Init(const ncclUniqueId& id);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const CommConfig& config() const { return config_; }

  // ncclInProgress while Init or a nonblocking Finalize runs; the first
  // error otherwise; ncclSuccess when healthy.
  ncclResult_t AsyncState() const { return state_.load(std::memory_order_acquire); }
  void SetAsyncState(ncclResult_t r) { state_.store(r, std::memory_order_release); }
  // The message of the first asynchronous error ("" when none).
  std::string AsyncMessage() const;

  void Submit(std::shared_ptr<Launch> launch);
  // Called by a stream that has reached `launch`.
  void Arrive(Launch& launch);
  // Arrive, then, when this was the last stream `launch` waited for, it is
  // next and nothing runs, run it on the calling thread and return true
  // (`done` is notified). False: the executor runs it; wait for `done`.
  bool ArriveAndRun(const std::shared_ptr<Launch>& launch);
  // Blocks until every submitted launch has completed.
  void Flush();
  // Runs an internal AllGather of `mine` (same size on every rank) through
  // the executor and returns every rank's bytes in rank order.
  absl::StatusOr<std::vector<std::string>> AllGatherBytes(const std::string& mine);

  // Flush, then stop the executor and close the links.
  void Shutdown();
  // Abort: see the file comment.
  void Abort();
  bool aborted() const { return abort_.load(); }

  // User-defined PreMulSum operators (ids from ncclNumOps up).
  ncclRedOp_t AddPreMulSum(ncclDataType_t type, const void* scalar, bool device_residence);
  absl::Status RemoveRedOp(ncclRedOp_t op);
  // Resolves `op` for `type` into desc->reduction / desc->device_scalar.
  absl::Status ResolveRedOp(ncclRedOp_t op, ncclDataType_t type, OpDesc* desc) const;

 private:
  struct UserOp {
    ncclDataType_t type;
    bool device_residence;
    const void* scalar_ptr;
    Reduction reduction;
  };

  void RunExecutor();
  // Runs a launch taken off the queue (running_ set), then clears running_.
  void Run(Launch& launch);
  absl::Status Execute(Launch& launch);
  void RecordError(const absl::Status& s);
  void StopExecutor();

  const int nranks_;
  const int rank_;
  const CommConfig config_;
  std::atomic<ncclResult_t> state_{ncclInProgress};
  std::atomic<bool> abort_{false};

  std::unique_ptr<PeerLinks> links_;
  std::vector<char> staging_;
  std::unique_ptr<MemRegion> staging_region_;
  MoverEnv env_;  // used by the thread that runs a launch (one at a time)
  // The device-clock end of the last launch run (its clock end, or the
  // real time it finished): the next launch, on whatever stream, starts no
  // earlier, as NCCL runs a communicator's operations one after another.
  // Used like env_.
  int64_t last_launch_end_ns_ = 0;

  mutable absl::Mutex mu_;
  std::deque<std::shared_ptr<Launch>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // a launch runs (executor or a stream)
  std::string error_message_ ABSL_GUARDED_BY(mu_);
  std::map<int, UserOp> user_ops_ ABSL_GUARDED_BY(mu_);
  int next_user_op_ ABSL_GUARDED_BY(mu_) = ncclNumOps;
  std::thread executor_;
};

}  // namespace trirace::hostccl

// The public handle behind ncclComm_t.
struct ncclComm {
  std::shared_ptr<trirace::hostccl::CommCore> core;
  std::thread helper;  // nonblocking Init / Finalize
};

#endif  // TRIRACE_HOSTCCL_SRC_COMM_H_
