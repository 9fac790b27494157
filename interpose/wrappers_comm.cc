// The ncclX definitions of communicator lifecycle calls (init, split,
// shrink, finalize, destroy, abort, revoke): forwarded, then the comm is
// registered or removed. ncclConfig_t is passed through as given, except
// that in schedule mode a comm created with a declared role may get the
// shim's copy with trafficClass set (comm_traffic_class.h); an ncclCommInitRank
// is then forwarded as ncclCommInitRankConfig with NCCL's defaults plus
// that class.
//
// Every creating call, on every path, tells the comm ledger what it
// returned (comm_ledger.h); destroy and abort tell it what ended. While the
// shim records, a call on a comm the ledger is sure is not a live one is
// refused (Shim::CheckComm) instead of being passed to NCCL.
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "interpose/annotations.h"
#include "interpose/comm/comm_state.h"
#include "interpose/comm/comm_traffic_class.h"
#include "interpose/comm/user_group.h"
#include "interpose/forward.h"

using trirace::MonotonicNs;
using trirace::ShimMode;
using trirace::interpose::CommLedger;
using trirace::interpose::CommCall;
using trirace::interpose::CommState;
using trirace::interpose::ConfigWithRoleTrafficClass;
using trirace::interpose::ConfiguredRoleTrafficClasses;
using trirace::interpose::Forward;
using trirace::interpose::NewComm;
using trirace::interpose::RealNccl;
using trirace::interpose::ReentryGuard;
using trirace::interpose::Shim;
using trirace::interpose::ThisThreadGroup;
using trirace::interpose::UserGroup;

namespace {

bool Created(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

// Brackets a creating call for the comm ledger, on every path (recorded or
// only forwarded); nothing in mode off.
class Creation {
 public:
  explicit Creation(Shim& shim) : ledger_(shim.mode() != ShimMode::kOff ? &shim.ledger() : nullptr) {
    if (ledger_ != nullptr) ledger_->Begin();
  }
  ~Creation() {
    if (ledger_ != nullptr) ledger_->End();
  }
  Creation(const Creation&) = delete;
  Creation& operator=(const Creation&) = delete;

  // The call returned `r`; `out` holds its `n` comms when it created them
  // (read only then). `expect`: a comm is due (not NCCL_SPLIT_NOCOLOR); an
  // empty slot is then written later by NCCL: at the end of the caller's
  // group, or from its own thread (a nonblocking comm).
  void Returned(ncclResult_t r, ncclComm_t* out, int n, bool expect) {
    if (ledger_ == nullptr || out == nullptr || n <= 0 || !Created(r)) return;
    ledger_->Created(out, n);
    if (!expect || n != 1 || *out != nullptr) return;
    UserGroup& group = ThisThreadGroup();
    const bool in_group = r == ncclSuccess && group.depth() > 0;
    if (in_group) group.AddPendingComm(out);
    ledger_->Pending(in_group);
  }

 private:
  CommLedger* const ledger_;
};

// Where the shim records: the refusal of `comm`, an argument of `name`,
// when it is sure it is not a live comm (Shim::CheckComm); ncclSuccess to
// go on. A split or shrink refused inside a group still reaches NCCL with
// comm=NULL (`null_call`), so that NCCL fails the group as a whole.
template <typename NullCall>
ncclResult_t Refusal(Shim& shim, ncclComm_t comm, const char* name, NullCall null_call) {
  const ncclResult_t refused = shim.CheckComm(comm, name, /*group_call=*/true);
  if (refused != ncclSuccess && ThisThreadGroup().depth() > 0) null_call();
  return refused;
}

// A comm that a call created and that is usable now goes to the launcher.
void Ready(Shim& shim, CommState* state, ncclResult_t r) {
  if (state != nullptr && r == ncclSuccess) shim.OnCommsReady({&state, 1});
}

// Whether a comm made with `config` is nonblocking: config->blocking = 0 when
// the caller's struct holds that field, else NCCL's default (NCCL_COMM_BLOCKING).
bool Nonblocking(const ncclConfig_t* config, bool inherited) {
  if (config != nullptr && config->size >= offsetof(ncclConfig_t, blocking) + sizeof(int) &&
      config->blocking != NCCL_CONFIG_UNDEF_INT) {
    return config->blocking == 0;
  }
  if (inherited) return true;
  const char* env = std::getenv("NCCL_COMM_BLOCKING");
  return env != nullptr && std::strcmp(env, "0") == 0;
}

// Fills rank, size and device of a new comm from the real library when it
// is ready (a nonblocking comm still in progress keeps what the caller knew).
void Describe(const Shim& shim, ncclResult_t r, NewComm* c) {
  const RealNccl* real = shim.real();
  if (r != ncclSuccess || c->comm == nullptr) return;
  int v = -1;
  if (c->rank < 0 && real->CommUserRank != nullptr && real->CommUserRank(c->comm, &v) == ncclSuccess) c->rank = v;
  if (c->nranks < 0 && real->CommCount != nullptr && real->CommCount(c->comm, &v) == ncclSuccess) c->nranks = v;
  if (real->CommCuDevice != nullptr && real->CommCuDevice(c->comm, &v) == ncclSuccess) c->device = v;
}

// The config a new comm is created with: see the file comment.
struct CreationConfig {
  int traffic_class = trirace::interpose::kNoTrafficClass;
  ncclConfig_t storage;
  ncclConfig_t* config = nullptr;
};

// A NULL `caller` becomes NCCL's defaults plus the class only where
// `null_takes_defaults`: a split without a config inherits its parent's
// instead, and a plain InitRank can carry one only as InitRankConfig.
void ChooseConfig(const Shim& shim, ncclConfig_t* caller, bool null_takes_defaults, CreationConfig* out) {
  out->config = caller;
  if (!shim.shapes_comm_config() || (caller == nullptr && !null_takes_defaults)) return;
  out->config = const_cast<ncclConfig_t*>(ConfigWithRoleTrafficClass(caller, trirace::interpose::NewCommRole(),
                                                                      ConfiguredRoleTrafficClasses(),
                                                                      &out->storage, &out->traffic_class));
}

ncclResult_t InitRank(Shim& shim, CommCall call, ncclComm_t* comm, int nranks, const ncclUniqueId* ids, int n_ids,
                      int rank, ncclConfig_t* config) {
  ReentryGuard guard;
  Creation creating(shim);
  const int64_t t0 = MonotonicNs();
  CreationConfig creation;
  ChooseConfig(shim, config, call != CommCall::kInitRank || shim.real()->CommInitRankConfig != nullptr, &creation);
  config = creation.config;
  ncclResult_t r;
  switch (call) {
    case CommCall::kInitRank:
      if (config != nullptr) {
        r = Forward(shim, &RealNccl::CommInitRankConfig, "ncclCommInitRank", comm, nranks, ids[0], rank, config);
      } else {
        r = Forward(shim, &RealNccl::CommInitRank, "ncclCommInitRank", comm, nranks, ids[0], rank);
      }
      break;
    case CommCall::kInitRankConfig:
      r = Forward(shim, &RealNccl::CommInitRankConfig, "ncclCommInitRankConfig", comm, nranks, ids[0], rank, config);
      break;
    default:
      r = Forward(shim, &RealNccl::CommInitRankScalable, "ncclCommInitRankScalable", comm, nranks, rank, n_ids,
                  const_cast<ncclUniqueId*>(ids), config);
      break;
  }
  NewComm c;
  c.call = call;
  c.comm = Created(r) && comm != nullptr ? *comm : nullptr;
  c.id = trirace::interpose::CommIdFromUniqueIds(ids, n_ids);
  c.rank = rank;
  c.nranks = nranks;
  c.nonblocking = r == ncclInProgress || Nonblocking(call == CommCall::kInitRank ? nullptr : config, false);
  c.traffic_class = creation.traffic_class;
  Describe(shim, r, &c);
  creating.Returned(r, comm, 1, /*expect=*/true);
  Ready(shim, shim.OnCommCreated(c, t0, r), r);
  return r;
}

ncclResult_t Remove(Shim& shim, CommCall call, ncclComm_t comm) {
  const char* name = call == CommCall::kFinalize ? "ncclCommFinalize"
                     : call == CommCall::kAbort  ? "ncclCommAbort"
                                                 : "ncclCommDestroy";
  // Destroying a comm twice is a double free in NCCL.
  if (const ncclResult_t refused = shim.CheckComm(comm, name, /*group_call=*/false); refused != ncclSuccess) {
    return refused;
  }
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  CommState* state = shim.OnCommRemoving(comm);
  const bool ends = call != CommCall::kFinalize && comm != nullptr;
  // Before the real call: a comm created meanwhile at the same address is live again.
  if (ends) shim.ledger().Destroying(comm, name);
  ncclResult_t r;
  switch (call) {
    case CommCall::kFinalize:
      r = Forward(shim, &RealNccl::CommFinalize, name, comm);
      break;
    case CommCall::kAbort:
      r = Forward(shim, &RealNccl::CommAbort, name, comm);
      break;
    default:
      r = Forward(shim, &RealNccl::CommDestroy, name, comm);
      break;
  }
  if (ends && !Created(r)) shim.ledger().Undestroyed(comm);
  shim.OnCommRemoved(call, state, t0, r);
  return r;
}

}  // namespace

extern "C" {

TRIRACE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) {
    Creation creating(shim);
    const ncclResult_t r = Forward(shim, &RealNccl::CommInitRank, "ncclCommInitRank", comm, nranks, commId, rank);
    creating.Returned(r, comm, 1, /*expect=*/true);
    return r;
  }
  return InitRank(shim, CommCall::kInitRank, comm, nranks, &commId, 1, rank, nullptr);
}

TRIRACE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                   ncclConfig_t* config) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) {
    Creation creating(shim);
    const ncclResult_t r =
        Forward(shim, &RealNccl::CommInitRankConfig, "ncclCommInitRankConfig", comm, nranks, commId, rank, config);
    creating.Returned(r, comm, 1, /*expect=*/true);
    return r;
  }
  return InitRank(shim, CommCall::kInitRankConfig, comm, nranks, &commId, 1, rank, config);
}

TRIRACE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                     ncclUniqueId* commIds, ncclConfig_t* config) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || commIds == nullptr || nId <= 0) {
    Creation creating(shim);
    const ncclResult_t r = Forward(shim, &RealNccl::CommInitRankScalable, "ncclCommInitRankScalable", newcomm, nranks,
                                   myrank, nId, commIds, config);
    creating.Returned(r, newcomm, 1, /*expect=*/true);
    return r;
  }
  return InitRank(shim, CommCall::kInitRankScalable, newcomm, nranks, commIds, nId, myrank, config);
}

TRIRACE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  Shim& shim = Shim::Get();
  Creation creating(shim);
  if (!shim.ShouldRecord()) {
    const ncclResult_t r = Forward(shim, &RealNccl::CommInitAll, "ncclCommInitAll", comm, ndev, devlist);
    creating.Returned(r, comm, r == ncclSuccess ? ndev : 0, /*expect=*/false);
    return r;
  }
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  const ncclResult_t r = Forward(shim, &RealNccl::CommInitAll, "ncclCommInitAll", comm, ndev, devlist);
  creating.Returned(r, comm, r == ncclSuccess ? ndev : 0, /*expect=*/false);
  const uint64_t id = trirace::interpose::CommIdForInitAll(static_cast<int>(getpid()), shim.NextInitAllSequence());
  std::vector<CommState*> ready;
  for (int i = 0; i < ndev; ++i) {
    NewComm c;
    c.call = CommCall::kInitAll;
    c.comm = r == ncclSuccess && comm != nullptr ? comm[i] : nullptr;
    c.id = id;
    c.rank = i;
    c.nranks = ndev;
    Describe(shim, r, &c);
    CommState* state = shim.OnCommCreated(c, t0, r);
    if (r != ncclSuccess) break;  // one failed event is enough
    if (state != nullptr) ready.push_back(state);
  }
  shim.OnCommsReady(ready);  // together: one thread drives every device
  return r;
}

TRIRACE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                          ncclConfig_t* config) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) {
    Creation creating(shim);
    const ncclResult_t r = Forward(shim, &RealNccl::CommSplit, "ncclCommSplit", comm, color, key, newcomm, config);
    creating.Returned(r, newcomm, 1, /*expect=*/color != NCCL_SPLIT_NOCOLOR);
    return r;
  }
  if (const ncclResult_t refused = Refusal(shim, comm, "ncclCommSplit", [&] {
        Forward(shim, &RealNccl::CommSplit, "ncclCommSplit", static_cast<ncclComm_t>(nullptr), color, key, newcomm,
                config);
      });
      refused != ncclSuccess) {
    return refused;
  }
  Creation creating(shim);  // after the check: the ledger is unsure while a creating call runs
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  CommState* parent = shim.registry().Find(comm);
  // Every rank of the parent calls split in the same order, so this index
  // (and the color) is the same on all members of the new comm.
  const uint64_t index = parent != nullptr ? parent->children.fetch_add(1, std::memory_order_relaxed) : 0;
  CreationConfig creation;
  ChooseConfig(shim, config, /*null_takes_defaults=*/false, &creation);
  const ncclResult_t r =
      Forward(shim, &RealNccl::CommSplit, "ncclCommSplit", comm, color, key, newcomm, creation.config);
  NewComm c;
  c.call = CommCall::kSplit;
  c.traffic_class = creation.traffic_class;
  c.comm = Created(r) && newcomm != nullptr ? *newcomm : nullptr;
  c.parent_id = parent != nullptr ? parent->id : 0;
  c.id = trirace::interpose::CommIdForSplit(c.parent_id, index, color);
  // A split without a config inherits the parent's.
  c.nonblocking = r == ncclInProgress || Nonblocking(config, parent != nullptr && parent->nonblocking);
  Describe(shim, r, &c);
  creating.Returned(r, newcomm, 1, /*expect=*/color != NCCL_SPLIT_NOCOLOR);
  // NCCL_SPLIT_NOCOLOR: no new comm.
  if (c.comm != nullptr || !Created(r)) Ready(shim, shim.OnCommCreated(c, t0, r), r);
  return r;
}

TRIRACE_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                           ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) {
    Creation creating(shim);
    const ncclResult_t r = Forward(shim, &RealNccl::CommShrink, "ncclCommShrink", comm, excludeRanksList,
                                   excludeRanksCount, newcomm, config, shrinkFlags);
    creating.Returned(r, newcomm, 1, /*expect=*/true);
    return r;
  }
  if (const ncclResult_t refused = Refusal(shim, comm, "ncclCommShrink", [&] {
        Forward(shim, &RealNccl::CommShrink, "ncclCommShrink", static_cast<ncclComm_t>(nullptr), excludeRanksList,
                excludeRanksCount, newcomm, config, shrinkFlags);
      });
      refused != ncclSuccess) {
    return refused;
  }
  Creation creating(shim);
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  CommState* parent = shim.registry().Find(comm);
  const uint64_t index = parent != nullptr ? parent->children.fetch_add(1, std::memory_order_relaxed) : 0;
  const ncclResult_t r = Forward(shim, &RealNccl::CommShrink, "ncclCommShrink", comm, excludeRanksList,
                                 excludeRanksCount, newcomm, config, shrinkFlags);
  NewComm c;
  c.call = CommCall::kShrink;
  c.comm = Created(r) && newcomm != nullptr ? *newcomm : nullptr;
  c.parent_id = parent != nullptr ? parent->id : 0;
  c.id = trirace::interpose::CommIdForShrink(c.parent_id, index, excludeRanksList, excludeRanksCount);
  c.nonblocking = r == ncclInProgress || Nonblocking(config, parent != nullptr && parent->nonblocking);
  Describe(shim, r, &c);
  creating.Returned(r, newcomm, 1, /*expect=*/true);
  if (c.comm != nullptr || !Created(r)) Ready(shim, shim.OnCommCreated(c, t0, r), r);
  return r;
}

TRIRACE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) return Forward(shim, &RealNccl::CommFinalize, "ncclCommFinalize", comm);
  return Remove(shim, CommCall::kFinalize, comm);
}

TRIRACE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) return Forward(shim, &RealNccl::CommDestroy, "ncclCommDestroy", comm);
  return Remove(shim, CommCall::kDestroy, comm);
}

TRIRACE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) return Forward(shim, &RealNccl::CommAbort, "ncclCommAbort", comm);
  return Remove(shim, CommCall::kAbort, comm);
}

TRIRACE_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) return Forward(shim, &RealNccl::CommRevoke, "ncclCommRevoke", comm, revokeFlags);
  if (const ncclResult_t refused = shim.CheckComm(comm, "ncclCommRevoke", /*group_call=*/false);
      refused != ncclSuccess) {
    return refused;
  }
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  const ncclResult_t r = Forward(shim, &RealNccl::CommRevoke, "ncclCommRevoke", comm, revokeFlags);
  shim.OnCommCall(CommCall::kRevoke, comm, t0, r);
  return r;
}

}  // extern "C"
