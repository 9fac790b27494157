// The exported NCCL functions for versions, ids, communicators, operators
// and groups. Collectives are in api_coll.cc.
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"
#include "common/status.h"
#include "hostccl/src/api_util.h"
#include "hostccl/src/bootstrap.h"
#include "hostccl/src/group.h"

namespace trirace::hostccl {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

absl::StatusOr<CommConfig> ParseConfig(const ncclConfig_t* given, const CommConfig* parent) {
  CommConfig cfg = parent != nullptr ? *parent : CommConfig{};
  if (given == nullptr) return cfg;
  if (given->magic != kConfigMagic || given->size < offsetof(ncclConfig_t, cgaClusterSize)) {
    return absl::InvalidArgumentError(
        "config is not initialised: assign NCCL_CONFIG_INITIALIZER before setting fields");
  }
  // Read only the fields the caller's struct has (older headers are smaller).
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  std::memcpy(&c, given, std::min(given->size, sizeof(c)));
  if (c.blocking != NCCL_CONFIG_UNDEF_INT) {
    if (c.blocking != 0 && c.blocking != 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("config->blocking=%d: accepted values are 0 and 1", c.blocking));
    }
    cfg.blocking = c.blocking == 1;
  }
  if (c.trafficClass != NCCL_CONFIG_UNDEF_INT) cfg.traffic_class = c.trafficClass;
  if (c.commName != nullptr) cfg.name = c.commName;
  return cfg;
}

absl::Status CheckRank(int nranks, int rank) {
  if (nranks < 1) return absl::InvalidArgumentError(absl::StrFormat("nranks=%d: must be at least 1", nranks));
  if (rank < 0 || rank >= nranks) {
    return absl::InvalidArgumentError(absl::StrFormat("rank=%d is out of range [0, %d)", rank, nranks));
  }
  return absl::OkStatus();
}

// Creates the handle and runs Init per the blocking mode and group state.
ncclResult_t InitComm(const char* func, ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                      const CommConfig& cfg) {
  auto* handle = new ncclComm{std::make_shared<CommCore>(nranks, rank, cfg), {}};
  RegisterComm(handle);
  *out = handle;
  std::shared_ptr<CommCore> core = handle->core;
  if (!cfg.blocking && !InGroup()) {
    handle->helper = std::thread([core, id] { (void)core->Init(id); });
    return ncclInProgress;
  }
  absl::Status s = RunOrDefer([core, id] { return core->Init(id); });
  if (!s.ok() && !InGroup()) {
    UnregisterComm(handle);
    delete handle;
    *out = nullptr;
  }
  return ApiResult(func, s);
}

void JoinHelper(ncclComm* comm) {
  if (comm->helper.joinable()) comm->helper.join();
}

}  // namespace
}  // namespace trirace::hostccl

using namespace trirace::hostccl;  // NOLINT: the C ABI lives in the global namespace

extern "C" {

TRIRACE_EXPORT ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr) return ApiResult("ncclGetVersion", absl::InvalidArgumentError("version is NULL"));
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return ApiResult("ncclGetUniqueId", absl::InvalidArgumentError("uniqueId is NULL"));
  return ApiResult("ncclGetUniqueId", CreateUniqueId(uniqueId));
}

TRIRACE_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                    ncclConfig_t* config) {
  const char* f = "ncclCommInitRankConfig";
  if (comm == nullptr) return ApiResult(f, absl::InvalidArgumentError("comm is NULL"));
  absl::Status s = CheckRank(nranks, rank);
  if (!s.ok()) return ApiResult(f, s);
  absl::StatusOr<CommConfig> cfg = ParseConfig(config, nullptr);
  if (!cfg.ok()) return ApiResult(f, cfg.status());
  return InitComm(f, comm, nranks, commId, rank, *cfg);
}

TRIRACE_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  const char* f = "ncclCommInitRank";
  if (comm == nullptr) return ApiResult(f, absl::InvalidArgumentError("comm is NULL"));
  absl::Status s = CheckRank(nranks, rank);
  if (!s.ok()) return ApiResult(f, s);
  return InitComm(f, comm, nranks, commId, rank, CommConfig{});
}

TRIRACE_EXPORT ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  const char* f = "ncclCommInitRankScalable";
  if (commIds == nullptr) return ApiResult(f, absl::InvalidArgumentError("commIds is NULL"));
  if (nId != 1) {
    return ApiResult(f, absl::UnimplementedError(absl::StrFormat(
                            "nId=%d: hostccl supports a single unique id (nId=1) only", nId)));
  }
  return pncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}

TRIRACE_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* f = "ncclCommInitAll";
  if (comms == nullptr) return ApiResult(f, absl::InvalidArgumentError("comms is NULL"));
  if (ndev < 1) return ApiResult(f, absl::InvalidArgumentError(absl::StrFormat("ndev=%d: must be at least 1", ndev)));
  for (int i = 0; devlist != nullptr && i < ndev; ++i) {
    if (devlist[i] < 0) {
      return ApiResult(f, absl::InvalidArgumentError(absl::StrFormat("devlist[%d]=%d is negative", i, devlist[i])));
    }
  }
  ncclUniqueId id;
  absl::Status s = CreateUniqueId(&id);
  if (!s.ok()) return ApiResult(f, s);
  std::vector<ncclComm*> handles(ndev);
  std::vector<absl::Status> results(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    CommConfig cfg;
    cfg.device = devlist != nullptr ? devlist[i] : i;
    handles[i] = new ncclComm{std::make_shared<CommCore>(ndev, i, cfg), {}};
    threads.emplace_back([&, i] { results[i] = handles[i]->core->Init(id); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (!results[i].ok()) s = results[i];
  }
  for (int i = 0; i < ndev; ++i) {
    if (s.ok()) {
      RegisterComm(handles[i]);
      comms[i] = handles[i];
    } else {
      handles[i]->core->Abort();
      delete handles[i];
    }
  }
  return ApiResult(f, s);
}

TRIRACE_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  const char* f = "ncclCommFinalize";
  absl::StatusOr<std::shared_ptr<CommCore>> core = ReadyComm(comm);
  if (!core.ok()) return ApiResult(f, core.status());
  JoinHelper(comm);
  if ((*core)->config().blocking) {
    (*core)->Flush();
    return ApiResult(f, absl::OkStatus());
  }
  (*core)->SetAsyncState(ncclInProgress);
  comm->helper = std::thread([c = *core] {
    c->Flush();
    if (c->AsyncState() == ncclInProgress) c->SetAsyncState(ncclSuccess);
  });
  return ncclInProgress;
}

TRIRACE_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (!UnregisterComm(comm)) {
    return ApiResult("ncclCommDestroy", absl::InvalidArgumentError(absl::StrFormat(
                                            "comm=%p is not a live hostccl communicator (destroyed twice?)",
                                            static_cast<void*>(comm))));
  }
  JoinHelper(comm);
  comm->core->Shutdown();
  delete comm;
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (!UnregisterComm(comm)) {
    return ApiResult("ncclCommAbort", absl::InvalidArgumentError(absl::StrFormat(
                                          "comm=%p is not a live hostccl communicator (destroyed twice?)",
                                          static_cast<void*>(comm))));
  }
  comm->core->Abort();
  JoinHelper(comm);
  delete comm;
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                           ncclConfig_t* config) {
  const char* f = "ncclCommSplit";
  absl::StatusOr<std::shared_ptr<CommCore>> parent = ReadyComm(comm);
  if (!parent.ok()) return ApiResult(f, parent.status());
  if (newcomm == nullptr) return ApiResult(f, absl::InvalidArgumentError("newcomm is NULL"));
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return ApiResult(f, absl::InvalidArgumentError(absl::StrFormat(
                            "color=%d: must be >= 0 or NCCL_SPLIT_NOCOLOR (%d)", color, NCCL_SPLIT_NOCOLOR)));
  }
  absl::StatusOr<CommConfig> cfg = ParseConfig(config, &(*parent)->config());
  if (!cfg.ok()) return ApiResult(f, cfg.status());
  cfg->device = (*parent)->config().device;
  *newcomm = nullptr;
  auto job = [p = *parent, color, key, newcomm, cfg = *cfg]() -> absl::Status {
    struct Entry {
      int32_t color, key;
    };
    Entry mine{color, key};
    absl::StatusOr<std::vector<std::string>> all = p->AllGatherBytes(std::string(reinterpret_cast<char*>(&mine), sizeof(mine)));
    if (!all.ok()) return all.status();
    std::vector<std::pair<int32_t, int>> members;  // (key, parent rank) of my color
    for (int r = 0; r < p->nranks(); ++r) {
      Entry e;
      std::memcpy(&e, (*all)[r].data(), sizeof(e));
      if (color != NCCL_SPLIT_NOCOLOR && e.color == color) members.emplace_back(e.key, r);
    }
    std::sort(members.begin(), members.end());
    int new_rank = -1;
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].second == p->rank()) new_rank = static_cast<int>(i);
    }
    ncclUniqueId id{};
    if (new_rank == 0) TRIRACE_RETURN_IF_ERROR(CreateUniqueId(&id));
    absl::StatusOr<std::vector<std::string>> ids = p->AllGatherBytes(std::string(id.internal, sizeof(id.internal)));
    if (!ids.ok()) return ids.status();
    if (color == NCCL_SPLIT_NOCOLOR) return absl::OkStatus();
    std::memcpy(id.internal, (*ids)[members[0].second].data(), sizeof(id.internal));
    auto* handle = new ncclComm{std::make_shared<CommCore>(static_cast<int>(members.size()), new_rank, cfg), {}};
    absl::Status s = handle->core->Init(id);
    if (!s.ok()) {
      delete handle;
      return s;
    }
    RegisterComm(handle);
    *newcomm = handle;
    return absl::OkStatus();
  };
  return ApiResult(f, RunOrDefer(job));
}

TRIRACE_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  const char* f = "ncclCommGetAsyncError";
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return ApiResult(f, core.status());
  if (asyncError == nullptr) return ApiResult(f, absl::InvalidArgumentError("asyncError is NULL"));
  *asyncError = (*core)->AsyncState();
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return ApiResult("ncclCommCount", core.status());
  if (count == nullptr) return ApiResult("ncclCommCount", absl::InvalidArgumentError("count is NULL"));
  *count = (*core)->nranks();
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return ApiResult("ncclCommCuDevice", core.status());
  if (device == nullptr) return ApiResult("ncclCommCuDevice", absl::InvalidArgumentError("device is NULL"));
  *device = (*core)->config().device;
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return ApiResult("ncclCommUserRank", core.status());
  if (rank == nullptr) return ApiResult("ncclCommUserRank", absl::InvalidArgumentError("rank is NULL"));
  *rank = (*core)->rank();
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  (void)size;
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return ApiResult("ncclCommRegister", core.status());
  if (handle == nullptr) return ApiResult("ncclCommRegister", absl::InvalidArgumentError("handle is NULL"));
  // Host buffers need no registration: the handle is the buffer itself.
  *handle = buff != nullptr ? buff : static_cast<void*>(comm);
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  (void)handle;
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  return ApiResult("ncclCommDeregister", core.status());
}

TRIRACE_EXPORT ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return ApiResult("ncclMemAlloc", absl::InvalidArgumentError("ptr is NULL"));
  void* p = nullptr;
  if (posix_memalign(&p, 4096, size == 0 ? 1 : size) != 0) {
    return ApiResult("ncclMemAlloc", trirace::SystemError(absl::StrFormat("allocating %zu bytes", size), ENOMEM));
  }
  *ptr = p;
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclMemFree(void* ptr) {
  std::free(ptr);
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* f = "ncclRedOpCreatePreMulSum";
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return ApiResult(f, core.status());
  if (op == nullptr) return ApiResult(f, absl::InvalidArgumentError("op is NULL"));
  if (scalar == nullptr) return ApiResult(f, absl::InvalidArgumentError("scalar is NULL"));
  if (!TypeSupported(datatype)) {
    return ApiResult(f, absl::InvalidArgumentError(absl::StrFormat(
                            "datatype=%d (%s) is not supported by hostccl", static_cast<int>(datatype),
                            TypeName(datatype))));
  }
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return ApiResult(f, absl::InvalidArgumentError(absl::StrFormat(
                            "residence=%d: use ncclScalarDevice or ncclScalarHostImmediate", residence)));
  }
  *op = (*core)->AddPreMulSum(datatype, scalar, residence == ncclScalarDevice);
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
  if (!core.ok()) return ApiResult("ncclRedOpDestroy", core.status());
  return ApiResult("ncclRedOpDestroy", (*core)->RemoveRedOp(op));
}

TRIRACE_EXPORT ncclResult_t pncclGroupStart() {
  GroupStart();
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t pncclGroupEnd() { return ApiResult("ncclGroupEnd", GroupEnd()); }

TRIRACE_EXPORT const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

TRIRACE_EXPORT const char* pncclGetLastError(ncclComm_t comm) {
  // A live comm's asynchronous error (an operation that failed on its
  // executor, say a peer that died) says more than the process's last API
  // error, which is NCCL's answer otherwise.
  if (comm != nullptr) {
    absl::StatusOr<std::shared_ptr<CommCore>> core = LookupComm(comm);
    if (core.ok()) {
      thread_local std::string message;
      message = (*core)->AsyncMessage();
      if (!message.empty()) return message.c_str();
    }
  }
  return LastErrorText();
}

TRIRACE_EXPORT void pncclResetDebugInit() {}

// The rest of the 2.28 API has no host meaning here.
TRIRACE_EXPORT ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  (void)comm, (void)revokeFlags;
  return ApiResult("ncclCommRevoke", absl::UnimplementedError("not supported on hostccl"));
}

TRIRACE_EXPORT ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  (void)comm, (void)excludeRanksList, (void)excludeRanksCount, (void)newcomm, (void)config, (void)shrinkFlags;
  return ApiResult("ncclCommShrink", absl::UnimplementedError("not supported on hostccl"));
}

TRIRACE_EXPORT ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                    int winFlags) {
  (void)comm, (void)buff, (void)size, (void)win, (void)winFlags;
  return ApiResult("ncclCommWindowRegister", absl::UnimplementedError("symmetric windows are not supported on hostccl"));
}

TRIRACE_EXPORT ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  (void)comm, (void)win;
  return ApiResult("ncclCommWindowDeregister", absl::UnimplementedError("symmetric windows are not supported on hostccl"));
}

TRIRACE_EXPORT ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  (void)simInfo;
  return ApiResult("ncclGroupSimulateEnd", absl::UnimplementedError("group simulation is not supported on hostccl"));
}

}  // extern "C"

HOSTCCL_WEAK_ALIAS(ncclGetVersion)
HOSTCCL_WEAK_ALIAS(ncclGetUniqueId)
HOSTCCL_WEAK_ALIAS(ncclCommInitRankConfig)
HOSTCCL_WEAK_ALIAS(ncclCommInitRank)
HOSTCCL_WEAK_ALIAS(ncclCommInitRankScalable)
HOSTCCL_WEAK_ALIAS(ncclCommInitAll)
HOSTCCL_WEAK_ALIAS(ncclCommFinalize)
HOSTCCL_WEAK_ALIAS(ncclCommDestroy)
HOSTCCL_WEAK_ALIAS(ncclCommAbort)
HOSTCCL_WEAK_ALIAS(ncclCommSplit)
HOSTCCL_WEAK_ALIAS(ncclCommGetAsyncError)
HOSTCCL_WEAK_ALIAS(ncclCommCount)
HOSTCCL_WEAK_ALIAS(ncclCommCuDevice)
HOSTCCL_WEAK_ALIAS(ncclCommUserRank)
HOSTCCL_WEAK_ALIAS(ncclCommRegister)
HOSTCCL_WEAK_ALIAS(ncclCommDeregister)
HOSTCCL_WEAK_ALIAS(ncclMemAlloc)
HOSTCCL_WEAK_ALIAS(ncclMemFree)
HOSTCCL_WEAK_ALIAS(ncclRedOpCreatePreMulSum)
HOSTCCL_WEAK_ALIAS(ncclRedOpDestroy)
HOSTCCL_WEAK_ALIAS(ncclGroupStart)
HOSTCCL_WEAK_ALIAS(ncclGroupEnd)
HOSTCCL_WEAK_ALIAS(ncclGetErrorString)
HOSTCCL_WEAK_ALIAS(ncclGetLastError)
// Declared deprecated in nccl.h; exported because libnccl exports it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
HOSTCCL_WEAK_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
HOSTCCL_WEAK_ALIAS(ncclCommRevoke)
HOSTCCL_WEAK_ALIAS(ncclCommShrink)
HOSTCCL_WEAK_ALIAS(ncclCommWindowRegister)
HOSTCCL_WEAK_ALIAS(ncclCommWindowDeregister)
HOSTCCL_WEAK_ALIAS(ncclGroupSimulateEnd)
