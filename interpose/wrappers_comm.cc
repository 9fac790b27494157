// The ncclX definitions of communicator lifecycle calls (init, split,
// shrink, finalize, destroy, abort, revoke): forwarded, then the comm is
// registered or removed. ncclConfig_t is passed through as given, except
// that in schedule mode a comm created with a declared role may get the
// shim's copy with trafficClass set (comm_traffic_class.h); an ncclCommInitRank
// is then forwarded as ncclCommInitRankConfig with NCCL's defaults plus
// that class.
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "interpose/annotations.h"
#include "interpose/comm_state.h"
#include "interpose/comm_traffic_class.h"
#include "interpose/forward.h"

using trirace::MonotonicNs;
using trirace::interpose::CommCall;
using trirace::interpose::CommState;
using trirace::interpose::ConfigWithRoleTrafficClass;
using trirace::interpose::ConfiguredRoleTrafficClasses;
using trirace::interpose::Forward;
using trirace::interpose::NewComm;
using trirace::interpose::RealNccl;
using trirace::interpose::ReentryGuard;
using trirace::interpose::Shim;

namespace {

bool Created(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

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
  Ready(shim, shim.OnCommCreated(c, t0, r), r);
  return r;
}

ncclResult_t Remove(Shim& shim, CommCall call, ncclComm_t comm) {
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  CommState* state = shim.OnCommRemoving(comm);
  ncclResult_t r;
  switch (call) {
    case CommCall::kFinalize:
      r = Forward(shim, &RealNccl::CommFinalize, "ncclCommFinalize", comm);
      break;
    case CommCall::kAbort:
      r = Forward(shim, &RealNccl::CommAbort, "ncclCommAbort", comm);
      break;
    default:
      r = Forward(shim, &RealNccl::CommDestroy, "ncclCommDestroy", comm);
      break;
  }
  shim.OnCommRemoved(call, state, t0, r);
  return r;
}

}  // namespace

extern "C" {

TRIRACE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) {
    return Forward(shim, &RealNccl::CommInitRank, "ncclCommInitRank", comm, nranks, commId, rank);
  }
  return InitRank(shim, CommCall::kInitRank, comm, nranks, &commId, 1, rank, nullptr);
}

TRIRACE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                   ncclConfig_t* config) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) {
    return Forward(shim, &RealNccl::CommInitRankConfig, "ncclCommInitRankConfig", comm, nranks, commId, rank, config);
  }
  return InitRank(shim, CommCall::kInitRankConfig, comm, nranks, &commId, 1, rank, config);
}

TRIRACE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                     ncclUniqueId* commIds, ncclConfig_t* config) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || commIds == nullptr || nId <= 0) {
    return Forward(shim, &RealNccl::CommInitRankScalable, "ncclCommInitRankScalable", newcomm, nranks, myrank, nId,
                   commIds, config);
  }
  return InitRank(shim, CommCall::kInitRankScalable, newcomm, nranks, commIds, nId, myrank, config);
}

TRIRACE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) return Forward(shim, &RealNccl::CommInitAll, "ncclCommInitAll", comm, ndev, devlist);
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  const ncclResult_t r = Forward(shim, &RealNccl::CommInitAll, "ncclCommInitAll", comm, ndev, devlist);
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
    return Forward(shim, &RealNccl::CommSplit, "ncclCommSplit", comm, color, key, newcomm, config);
  }
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
  // NCCL_SPLIT_NOCOLOR: no new comm.
  if (c.comm != nullptr || !Created(r)) Ready(shim, shim.OnCommCreated(c, t0, r), r);
  return r;
}

TRIRACE_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                           ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord()) {
    return Forward(shim, &RealNccl::CommShrink, "ncclCommShrink", comm, excludeRanksList, excludeRanksCount, newcomm,
                   config, shrinkFlags);
  }
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
  ReentryGuard guard;
  const int64_t t0 = MonotonicNs();
  const ncclResult_t r = Forward(shim, &RealNccl::CommRevoke, "ncclCommRevoke", comm, revokeFlags);
  shim.OnCommCall(CommCall::kRevoke, comm, t0, r);
  return r;
}

}  // extern "C"
