/*
 * net_v9.h: the v9 table (NCCL 2.24-2.25): size_t sizes, virtual NICs.
 * Part of the net plugin ABI declarations (net_abi.h includes every
 * version); see net_abi.h for where the layouts come from.
 */
#ifndef TRIRACE_PLUGIN_ABI_NET_V9_H_
#define TRIRACE_PLUGIN_ABI_NET_V9_H_

#include "plugin/abi/net_v10.h" /* the structs v9 shares with v10 */

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRIRACE_PLUGIN_ABI_NET_V9_H_ */
