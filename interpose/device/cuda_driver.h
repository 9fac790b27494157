// The few CUDA driver API types, constants and entry points the CUDA
// backend uses, declared here so nothing includes cuda.h or links libcuda.
// Values and signatures are those of cuda.h (CUDA 12/13); the handle types
// are opaque pointers, ABI-identical to the driver's.
//
// Internal to interpose/device.
#ifndef TRIRACE_INTERPOSE_DEVICE_CUDA_DRIVER_H_
#define TRIRACE_INTERPOSE_DEVICE_CUDA_DRIVER_H_

#include <cstddef>
#include <cstdint>

namespace trirace::device::cu {

using Result = int;  // CUresult
using Device = int;  // CUdevice
using DevicePtr = unsigned long long;  // CUdeviceptr (64-bit)
struct Context_;
using Context = Context_*;  // CUcontext
struct Stream_;
using Stream = Stream_*;  // CUstream
struct Event_;
using Event = Event_*;  // CUevent
using HostFn = void (*)(void*);

inline constexpr Result kSuccess = 0;        // CUDA_SUCCESS
inline constexpr Result kNotReady = 600;     // CUDA_ERROR_NOT_READY
inline constexpr unsigned kStreamNonBlocking = 0x1;    // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDisableTiming = 0x2;   // CU_EVENT_DISABLE_TIMING
inline constexpr unsigned kMemHostAllocPortable = 0x1;   // CU_MEMHOSTALLOC_PORTABLE
inline constexpr unsigned kMemHostAllocDeviceMap = 0x2;  // CU_MEMHOSTALLOC_DEVICEMAP
inline constexpr unsigned kStreamWaitValueGeq = 0x0;   // CU_STREAM_WAIT_VALUE_GEQ
inline constexpr int kCaptureStatusNone = 0;           // CU_STREAM_CAPTURE_STATUS_NONE
inline constexpr int kAttrCanMapHostMemory = 19;       // CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
// cuStreamWaitValue32 works without opting in from this driver version on.
inline constexpr int kMemOpsDefaultDriverVersion = 11070;

// Entry points resolved from libcuda.so.1 (names in Driver::kSymbols).
struct Api {
  Result (*Init)(unsigned flags);
  Result (*DriverGetVersion)(int* version);
  Result (*GetErrorString)(Result error, const char** text);
  Result (*GetErrorName)(Result error, const char** text);
  Result (*CtxGetCurrent)(Context* ctx);
  Result (*CtxGetDevice)(Device* device);
  Result (*DeviceGetAttribute)(int* value, int attribute, Device device);
  Result (*StreamCreate)(Stream* stream, unsigned flags);
  Result (*StreamDestroy)(Stream stream);                       // cuStreamDestroy_v2
  Result (*EventCreate)(Event* event, unsigned flags);
  Result (*EventDestroy)(Event event);                          // cuEventDestroy_v2
  Result (*EventRecord)(Event event, Stream stream);
  Result (*EventQuery)(Event event);
  Result (*EventSynchronize)(Event event);
  Result (*StreamWaitEvent)(Stream stream, Event event, unsigned flags);
  Result (*StreamWaitValue32)(Stream stream, DevicePtr addr, uint32_t value, unsigned flags);  // _v2
  Result (*MemHostAlloc)(void** p, size_t bytes, unsigned flags);
  Result (*MemHostGetDevicePointer)(DevicePtr* dptr, void* p, unsigned flags);  // _v2
  Result (*MemFreeHost)(void* p);
  Result (*StreamIsCapturing)(Stream stream, int* status);
  Result (*LaunchHostFunc)(Stream stream, HostFn fn, void* arg);
  // Optional (nullptr when absent): the PCI bus id of a device ordinal.
  Result (*DeviceGet)(Device* device, int ordinal);
  Result (*DeviceGetPCIBusId)(char* busid, int len, Device device);
  // Optional: making a device's primary context current for a while.
  Result (*DevicePrimaryCtxRetain)(Context* ctx, Device device);
  Result (*DevicePrimaryCtxRelease)(Device device);  // _v2
  Result (*CtxSetCurrent)(Context ctx);
};

}  // namespace trirace::device::cu

#endif  // TRIRACE_INTERPOSE_DEVICE_CUDA_DRIVER_H_
