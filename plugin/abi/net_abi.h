/*
 * net_abi.h: C declarations of the NCCL net plugin ABI, versions v8 to v11.
 *
 * What it is: the function tables (ncclNet_v8_t .. ncclNet_v11_t), their
 * property structs, the comm config, the v11 transfer attributes, the device
 * handle, the logger and profiler callback types and the constants that a
 * net plugin exports to NCCL (symbols ncclNetPlugin_vN) and that a loader of
 * such plugins (NCCL itself, TriRace's wrapper mode, hostccl) calls through.
 *
 * Written from the published ABI of NVIDIA NCCL 2.28.9 (the net plugin
 * interface that NCCL documents for external plugins); every struct was
 * checked field by field, in order, against that release. Layouts and names
 * are frozen: other TriRace modules include this header.
 *
 * Compiles as C11 and C++. ncclResult_t comes from the installed nccl.h; the
 * device handle types come from NCCL's public nccl_device/net_device.h when
 * that header exists and are declared here (same guard, same layout) when it
 * does not, so either include order works. The logger types are skipped when
 * NCCL's own internal debug header was included first.
 */
#ifndef TRIRACE_PLUGIN_ABI_NET_ABI_H_
#define TRIRACE_PLUGIN_ABI_NET_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include <nccl.h>

#if defined(__has_include)
#if __has_include(<nccl_device/net_device.h>)
#include <nccl_device/net_device.h>
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Constants ---------------------------------------------------------- */

/* Bytes of the opaque handle listen() fills and connect() reads. */
#define NCCL_NET_HANDLE_MAXSIZE 128
/* Largest value NCCL accepts for maxP2pBytes / maxCollBytes. */
#define NCCL_MAX_NET_SIZE_BYTES (1 * 1024 * 1024 * 1024 * 1024L)
/* Request value NCCL may pass to test() for LL/LL128 receives whose
 * completion it does not need (and that irecv may return). */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCL_NET_MULTI_REQUEST 0x2

/* Pointer kinds: ptrSupport bits and regMr `type`. */
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

/* Outstanding requests NCCL may keep per comm. */
#define NCCL_NET_MAX_REQUESTS 32
/* Physical devices one virtual NIC may merge. */
#define NCCL_NET_MAX_DEVS_PER_NIC 4

/* "Not set" values of ncclNetCommConfig.trafficClass and ncclNetAttr. */
#define NCCL_NET_TRAFFIC_CLASS_UNDEF -1
#define NCCL_NET_ATTR_UNDEF -1

/* ---- Logging and profiling callbacks ------------------------------------ */

#ifndef NCCL_DEBUG_H_
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

/* Subsystem bits of the logger's `flags` argument. */
typedef enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_SHM = 0x8,
  NCCL_NET = 0x10,
  NCCL_GRAPH = 0x20,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALLOC = 0x100,
  NCCL_CALL = 0x200,
  NCCL_PROXY = 0x400,
  NCCL_NVLS = 0x800,
  NCCL_BOOTSTRAP = 0x1000,
  NCCL_REG = 0x2000,
  NCCL_PROFILE = 0x4000,
  NCCL_RAS = 0x8000,
  NCCL_ALL = ~0
} ncclDebugLogSubSys;

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags,
                                  const char* file, int line, const char* fmt, ...);

/* Event types passed to the profiler callback. */
enum {
  ncclProfilerNetEventStart = 0,
  ncclProfilerNetEventStop,
  ncclProfilerNetEventUpdate,
  ncclProfilerNetEventUpdateAndStop
};

typedef ncclResult_t (*ncclProfilerCallback_t)(void** eHandle, int type, void* pHandle,
                                               int64_t pluginId, void* extData);
#endif /* NCCL_DEBUG_H_ */

/* Bit positions of ncclNetAttr_v11_t.op (NCCL sets op = 1u << func). */
enum {
  TRIRACE_NCCL_FUNC_BROADCAST = 0,
  TRIRACE_NCCL_FUNC_REDUCE = 1,
  TRIRACE_NCCL_FUNC_ALLGATHER = 2,
  TRIRACE_NCCL_FUNC_REDUCESCATTER = 3,
  TRIRACE_NCCL_FUNC_ALLREDUCE = 4,
  TRIRACE_NCCL_FUNC_SENDRECV = 5,
  TRIRACE_NCCL_FUNC_SEND = 6,
  TRIRACE_NCCL_FUNC_RECV = 7,
  TRIRACE_NCCL_FUNC_ALLTOALL = 8,
  TRIRACE_NCCL_FUNC_SCATTER = 9,
  TRIRACE_NCCL_FUNC_GATHER = 10
};

/* ---- Device offload handle (host plugins return NULL) ------------------- */

#ifndef NCCL_NET_DEVICE_H_
#define NCCL_NET_DEVICE_H_
#define NCCL_NET_DEVICE_INVALID_VERSION 0x0
#define NCCL_NET_MTU_SIZE 4096
#define NCCL_NET_DEVICE_UNPACK_VERSION 0x7
typedef enum {
  NCCL_NET_DEVICE_HOST = 0,
  NCCL_NET_DEVICE_UNPACK = 1,
  NCCL_NET_DEVICE_GIN_PROXY = 2,
  NCCL_NET_DEVICE_GIN_GDAKI = 3
} ncclNetDeviceType;

typedef struct {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v9_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v10_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v11_t ncclNetDeviceHandle_t;
#endif /* NCCL_NET_DEVICE_H_ */

/* ---- v11 (NCCL 2.28-2.29) ------------------------------------------------ */

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC];
} ncclNetVDeviceProps_v11_t;

typedef struct {
  int trafficClass; /* plugin-specific; NCCL_NET_TRAFFIC_CLASS_UNDEF if unset */
} ncclNetCommConfig_v11_t;

typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;  /* NCCL_PTR_* bits */
  int regIsGlobal; /* regMr not tied to one comm */
  int forceFlush;
  int speed;       /* Mbps */
  int port;
  float latency;   /* microseconds */
  int maxComms;
  int maxRecvs;    /* > 1: irecv(n > 1, ...) grouped receives */
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_v11_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
} ncclNetProperties_v11_t;

typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

/* Hints for the transfers that follow: op/algo/proto are bit masks
 * (1u << ncclFunc, 1u << algorithm, 1u << protocol) or NCCL_NET_ATTR_UNDEF. */
typedef struct {
  ncclNetCommAttr_v11_t sendCommAttr;
  ncclNetCommAttr_v11_t recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
} ncclNetAttr_v11_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v11_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v11_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v11_t* props);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_v11_t* netAttr);
} ncclNet_v11_t;

/* ---- v10 (NCCL 2.26-2.27) ------------------------------------------------ */

typedef ncclNetVDeviceProps_v11_t ncclNetVDeviceProps_v10_t;
typedef ncclNetCommConfig_v11_t ncclNetCommConfig_v10_t;

typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_v10_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
} ncclNetProperties_v10_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v10_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v10_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v10_t* props);
} ncclNet_v10_t;

/* ---- v9 (NCCL 2.24-2.25) ------------------------------------------------- */

typedef ncclNetVDeviceProps_v11_t ncclNetVDeviceProps_v9_t;
typedef ncclNetProperties_v10_t ncclNetProperties_v9_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v9_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v9_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v9_t* props);
} ncclNet_v9_t;

/* ---- v8 (NCCL 2.21-2.23): int sizes, no vNIC, no forceFlush -------------- */

typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v8_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags,
                        void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
} ncclNet_v8_t;

/* Exported table symbols, newest first (the order loaders try them). */
#define TRIRACE_NCCL_NET_SYMBOL_V11 "ncclNetPlugin_v11"
#define TRIRACE_NCCL_NET_SYMBOL_V10 "ncclNetPlugin_v10"
#define TRIRACE_NCCL_NET_SYMBOL_V9 "ncclNetPlugin_v9"
#define TRIRACE_NCCL_NET_SYMBOL_V8 "ncclNetPlugin_v8"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRIRACE_PLUGIN_ABI_NET_ABI_H_ */
