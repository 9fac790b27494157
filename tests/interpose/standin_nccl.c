/* A minimal stand-in for libnccl.so.2 (SONAME libnccl.so.2), for testing
 * the shim's interception without a GPU or hostccl.
 *
 * Like the real library it defines every function twice: the strong
 * pncclX and a weak alias ncclX. Communicators are single-process; data
 * calls act immediately on host memory (AllReduce/AllGather/Broadcast copy
 * send to recv as a one-rank comm would). ncclBcast calls ncclBroadcast
 * through the PLT, as NCCL does, so a shim sees itself re-entered.
 * standin_calls("AllReduce") returns how often each pncclX ran, so a test
 * can check that every call reached the library exactly once. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

#define EXPORT __attribute__((visibility("default")))
#define ALIAS(name) __attribute__((weak, alias("p" #name), visibility("default")))

enum { kGetVersion, kGetUniqueId, kCommInitRank, kCommInitRankConfig, kCommSplit, kCommDestroy, kCommFinalize,
       kCommAbort, kCommCount, kCommUserRank, kCommCuDevice, kCommGetAsyncError, kAllReduce, kBroadcast, kBcast,
       kAllGather, kSend, kRecv, kGroupStart, kGroupEnd, kCallKinds };
static const char* const kNames[kCallKinds] = {
    "GetVersion", "GetUniqueId", "CommInitRank", "CommInitRankConfig", "CommSplit", "CommDestroy", "CommFinalize",
    "CommAbort", "CommCount", "CommUserRank", "CommCuDevice", "CommGetAsyncError", "AllReduce", "Broadcast",
    "Bcast", "AllGather", "Send", "Recv", "GroupStart", "GroupEnd"};
static uint64_t calls[kCallKinds];
static uint64_t next_id;

#define COUNT(kind) __atomic_fetch_add(&calls[kind], 1, __ATOMIC_RELAXED)

/* The trafficClass of the config the last CommInitRankConfig / CommSplit
 * received: NO_CONFIG for a NULL config (a test checks what a shim passed). */
#define NO_CONFIG (-2)
static int last_traffic_class[kCallKinds];

static void RecordConfig(int kind, const ncclConfig_t* config) {
  int tc = NO_CONFIG;
  if (config != NULL && config->size >= offsetof(ncclConfig_t, trafficClass) + sizeof(int)) tc = config->trafficClass;
  __atomic_store_n(&last_traffic_class[kind], tc, __ATOMIC_RELAXED);
}

struct ncclComm {
  uint32_t magic;
  int nranks;
  int rank;
};
#define COMM_MAGIC 0x57a4d1e5u

static int ValidComm(const struct ncclComm* c) { return c != NULL && c->magic == COMM_MAGIC; }

static size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

EXPORT uint64_t standin_calls(const char* name) {
  for (int i = 0; i < kCallKinds; ++i) {
    if (strcmp(name, kNames[i]) == 0) return __atomic_load_n(&calls[i], __ATOMIC_RELAXED);
  }
  return UINT64_MAX;
}

EXPORT int standin_last_traffic_class(const char* name) {
  for (int i = 0; i < kCallKinds; ++i) {
    if (strcmp(name, kNames[i]) == 0) return __atomic_load_n(&last_traffic_class[i], __ATOMIC_RELAXED);
  }
  return NO_CONFIG;
}

EXPORT ncclResult_t pncclGetVersion(int* version) {
  COUNT(kGetVersion);
  if (version == NULL) return ncclInvalidArgument;
  /* STANDIN_NCCL_VERSION lets a test pose as another NCCL release. */
  const char* pose = getenv("STANDIN_NCCL_VERSION");
  *version = pose != NULL ? atoi(pose) : NCCL_VERSION_CODE;
  return ncclSuccess;
}
ncclResult_t ncclGetVersion(int* version) ALIAS(ncclGetVersion);

EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  COUNT(kGetUniqueId);
  if (id == NULL) return ncclInvalidArgument;
  memset(id, 0, sizeof(*id));
  uint64_t n = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
  memcpy(id->internal, &n, sizeof(n));
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) ALIAS(ncclGetUniqueId);

EXPORT const char* pncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "standin: no error" : "standin: error"; }
const char* ncclGetErrorString(ncclResult_t r) ALIAS(ncclGetErrorString);

EXPORT const char* pncclGetLastError(ncclComm_t comm) { (void)comm; return "standin: last error"; }
const char* ncclGetLastError(ncclComm_t comm) ALIAS(ncclGetLastError);

static ncclResult_t NewComm(ncclComm_t* comm, int nranks, int rank) {
  if (comm == NULL || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  struct ncclComm* c = calloc(1, sizeof(*c));
  if (c == NULL) return ncclSystemError;
  c->magic = COMM_MAGIC;
  c->nranks = nranks;
  c->rank = rank;
  *comm = c;
  return ncclSuccess;
}

EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  (void)id;
  COUNT(kCommInitRank);
  return NewComm(comm, nranks, rank);
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) ALIAS(ncclCommInitRank);

EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                            ncclConfig_t* config) {
  (void)id;
  COUNT(kCommInitRankConfig);
  if (config != NULL && config->magic != 0xcafebeef) return ncclInvalidArgument;
  RecordConfig(kCommInitRankConfig, config);
  return NewComm(comm, nranks, rank);
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config)
    ALIAS(ncclCommInitRankConfig);

EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  (void)key;
  COUNT(kCommSplit);
  RecordConfig(kCommSplit, config);
  if (!ValidComm(comm) || newcomm == NULL) return ncclInvalidArgument;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = NULL;
    return ncclSuccess;
  }
  return NewComm(newcomm, 1, 0);
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)
    ALIAS(ncclCommSplit);

static ncclResult_t FreeComm(ncclComm_t comm) {
  if (!ValidComm(comm)) return ncclInvalidArgument;
  comm->magic = 0;
  free(comm);
  return ncclSuccess;
}

EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  COUNT(kCommDestroy);
  return FreeComm(comm);
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) ALIAS(ncclCommDestroy);

EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  COUNT(kCommAbort);
  return FreeComm(comm);
}
ncclResult_t ncclCommAbort(ncclComm_t comm) ALIAS(ncclCommAbort);

EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  COUNT(kCommFinalize);
  return ValidComm(comm) ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclCommFinalize(ncclComm_t comm) ALIAS(ncclCommFinalize);

EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  COUNT(kCommCount);
  if (!ValidComm(comm) || count == NULL) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) ALIAS(ncclCommCount);

EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  COUNT(kCommUserRank);
  if (!ValidComm(comm) || rank == NULL) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) ALIAS(ncclCommUserRank);

EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  COUNT(kCommCuDevice);
  if (!ValidComm(comm) || device == NULL) return ncclInvalidArgument;
  *device = 0;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) ALIAS(ncclCommCuDevice);

EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  COUNT(kCommGetAsyncError);
  if (!ValidComm(comm) || error == NULL) return ncclInvalidArgument;
  *error = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) ALIAS(ncclCommGetAsyncError);

EXPORT ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  COUNT(kAllReduce);
  if (!ValidComm(comm) || TypeSize(datatype) == 0 || (int)op < 0) return ncclInvalidArgument;
  if (count > 0 && (sendbuff == NULL || recvbuff == NULL)) return ncclInvalidArgument;
  if (sendbuff != recvbuff && count > 0) memcpy(recvbuff, sendbuff, count * TypeSize(datatype));
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) ALIAS(ncclAllReduce);

EXPORT ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                   int root, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  COUNT(kBroadcast);
  if (!ValidComm(comm) || TypeSize(datatype) == 0 || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  if (sendbuff != recvbuff && count > 0) memcpy(recvbuff, sendbuff, count * TypeSize(datatype));
  return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) ALIAS(ncclBroadcast);

EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream) {
  COUNT(kBcast);
  /* Through the PLT, like NCCL: an interposer of ncclBroadcast sees this. */
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) ALIAS(ncclBcast);

EXPORT ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                   ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  COUNT(kAllGather);
  if (!ValidComm(comm) || TypeSize(datatype) == 0) return ncclInvalidArgument;
  if (sendcount > 0) memmove(recvbuff, sendbuff, sendcount * TypeSize(datatype));
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) ALIAS(ncclAllGather);

EXPORT ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                              cudaStream_t stream) {
  (void)sendbuff;
  (void)count;
  (void)stream;
  COUNT(kSend);
  if (!ValidComm(comm) || TypeSize(datatype) == 0 || peer < 0 || peer >= comm->nranks) return ncclInvalidArgument;
  return ncclSuccess;
}
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) ALIAS(ncclSend);

EXPORT ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                              cudaStream_t stream) {
  (void)stream;
  COUNT(kRecv);
  if (!ValidComm(comm) || TypeSize(datatype) == 0 || peer < 0 || peer >= comm->nranks) return ncclInvalidArgument;
  if (count > 0) memset(recvbuff, 0x5a, count * TypeSize(datatype));
  return ncclSuccess;
}
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) ALIAS(ncclRecv);

static __thread int group_depth;

EXPORT ncclResult_t pncclGroupStart(void) {
  COUNT(kGroupStart);
  ++group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupStart(void) ALIAS(ncclGroupStart);

EXPORT ncclResult_t pncclGroupEnd(void) {
  COUNT(kGroupEnd);
  if (group_depth == 0) return ncclInvalidUsage;
  --group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void) ALIAS(ncclGroupEnd);
