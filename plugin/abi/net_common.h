/*
 * net_common.h: what every version shares: constants, the logger and profiler callbacks, the ncclFunc bit positions of the v11 attributes and the device handle.
 * Part of the net plugin ABI declarations (net_abi.h includes every
 * version); see net_abi.h for where the layouts come from.
 */
#ifndef TRIRACE_PLUGIN_ABI_NET_COMMON_H_
#define TRIRACE_PLUGIN_ABI_NET_COMMON_H_

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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRIRACE_PLUGIN_ABI_NET_COMMON_H_ */
