// Backend selection: hostccl announces itself by exporting
// hostcclStreamCreate; any other NCCL runs on CUDA.
#include <dlfcn.h>

#include "interpose/device/device.h"

namespace trirace::device {

bool IsHostccl(void* nccl_handle) {
  return nccl_handle != nullptr && dlsym(nccl_handle, "hostcclStreamCreate") != nullptr;
}

absl::StatusOr<std::unique_ptr<Device>> SelectDevice(void* nccl_handle) {
  if (IsHostccl(nccl_handle)) return OpenHostDevice(nccl_handle);
  return OpenCudaDevice();
}

}  // namespace trirace::device
