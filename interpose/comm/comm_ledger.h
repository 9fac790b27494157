// CommLedger: every ncclComm_t this process's creating calls returned, and
// which of them were destroyed since, so the shim can tell that a comm it
// is handed is not one, without reading through the pointer.
//
// The real NCCL reads through the comm first thing (comm->startMagic): a
// pointer that never was a comm is a SIGSEGV, a destroyed comm is freed
// memory. The shim refuses such a comm with ncclInvalidArgument, but only
// where it is sure: Check() says kNever or kDestroyed only when every
// creating call of the process has been seen with its result (the comm
// registry is not enough: it skips comms it cannot take, and keeps
// finalized ones out). Every wrapper of a creating call (ncclCommInitRank,
// ncclCommInitRankConfig, ncclCommInitRankScalable, ncclCommInitAll,
// ncclCommSplit, ncclCommShrink), on every path including the forwarding
// one, brackets the real call with Begin() and End() and passes what it
// returned to Created() (or Pending(), below); ncclCommDestroy
// and ncclCommAbort call Destroying() before the real call (a comm created
// meanwhile at the same address is live again) and Undestroyed() when it
// failed.
//
// Not sure (kUnsure, forwarded) while a creating call runs on any thread,
// and once a creating call returned without its comm where one may still
// be written: NCCL writes a split's *newcomm at the end of the user's
// group, or from its own thread for a nonblocking comm. A group's slots
// are read again at its outermost end (Created(), then GroupEnded()); a
// nonblocking one the ledger cannot wait for, so it stays unsure for the
// rest of the process (every comm is then forwarded, as before).
//
// Bounded: destroyed addresses beyond kMaxDestroyed are forgotten oldest
// first (they then read as kNever, which is refused all the same).
//
// Thread safety: all methods are thread-safe (one mutex; the op path asks
// only for comms the registry does not know).
#ifndef TRIRACE_INTERPOSE_COMM_COMM_LEDGER_H_
#define TRIRACE_INTERPOSE_COMM_COMM_LEDGER_H_

#include <atomic>
#include <cstddef>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "nccl.h"

namespace trirace::interpose {

class CommLedger {
 public:
  static constexpr size_t kMaxDestroyed = 1 << 16;

  enum class Verdict {
    kLive,       // returned by a creating call, not destroyed
    kDestroyed,  // destroyed since (Check() names the call)
    kNever,      // no creating call of the process returned it
    kUnsure,     // a creating call may still hand it out: forward it
  };

  // A creating call starts (before the real call) and ends (after its
  // comms were passed to Created() or Pending()).
  void Begin();
  void End();
  // Comms a creating call wrote, or that slots it left were found holding at
  // its group's end; NULL ones are skipped.
  void Created(const ncclComm_t* comms, int n);
  // A creating call returned success without its comm, which NCCL writes
  // later: at the end of the caller's group (`in_group`: GroupEnded() once
  // it ended), or from its own thread (unsure for the rest of the process).
  void Pending(bool in_group);
  // The group that held `n` pending slots ended and their comms went to
  // Created(); `later`: the end returned ncclInProgress, so NCCL may still
  // write them.
  void GroupEnded(int n, bool later);

  // Before the real ncclCommDestroy/ncclCommAbort (`call`, a literal) of `comm`.
  void Destroying(ncclComm_t comm, const char* call);
  // The real call failed: `comm` is still a comm.
  void Undestroyed(ncclComm_t comm);

  // What `comm` is (never NULL here); for kDestroyed, *how is the call that
  // destroyed it ("ncclCommDestroy" or "ncclCommAbort").
  Verdict Check(ncclComm_t comm, const char** how) const;

  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  // comm -> nullptr while live, or the call that destroyed it.
  absl::flat_hash_map<ncclComm_t, const char*> comms_ ABSL_GUARDED_BY(mu_);
  std::deque<ncclComm_t> destroyed_order_ ABSL_GUARDED_BY(mu_);
  int pending_in_groups_ ABSL_GUARDED_BY(mu_) = 0;
  bool unsure_forever_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int> running_{0};
};

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMM_COMM_LEDGER_H_
