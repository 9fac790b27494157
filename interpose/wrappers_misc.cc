// The ncclX definitions that are forwarded without being recorded: version,
// unique id, error strings, queries, memory and buffer registration, custom
// reduction ops. Plus trirace_get_api, the annotation API entry point.
#include "interpose/annotations.h"
#include "interpose/forward.h"
#include "trirace/trirace.h"

using trirace::interpose::Forward;
using trirace::interpose::RealNccl;
using trirace::interpose::Shim;

extern "C" {

TRIRACE_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return Forward(Shim::Get(), &RealNccl::MemAlloc, "ncclMemAlloc", ptr, size);
}

TRIRACE_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  return Forward(Shim::Get(), &RealNccl::MemFree, "ncclMemFree", ptr);
}

TRIRACE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  return Forward(Shim::Get(), &RealNccl::GetVersion, "ncclGetVersion", version);
}

TRIRACE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return Forward(Shim::Get(), &RealNccl::GetUniqueId, "ncclGetUniqueId", uniqueId);
}

TRIRACE_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  Shim& shim = Shim::Get();
  const RealNccl* real = shim.real();
  return real != nullptr && real->GetErrorString != nullptr ? real->GetErrorString(result) : shim.UnavailableText();
}

TRIRACE_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  Shim& shim = Shim::Get();
  const RealNccl* real = shim.real();
  return real != nullptr && real->GetLastError != nullptr ? real->GetLastError(comm) : shim.UnavailableText();
}

TRIRACE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return Forward(Shim::Get(), &RealNccl::CommGetAsyncError, "ncclCommGetAsyncError", comm, asyncError);
}

TRIRACE_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return Forward(Shim::Get(), &RealNccl::CommCount, "ncclCommCount", comm, count);
}

TRIRACE_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return Forward(Shim::Get(), &RealNccl::CommCuDevice, "ncclCommCuDevice", comm, device);
}

TRIRACE_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return Forward(Shim::Get(), &RealNccl::CommUserRank, "ncclCommUserRank", comm, rank);
}

TRIRACE_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return Forward(Shim::Get(), &RealNccl::CommRegister, "ncclCommRegister", comm, buff, size, handle);
}

TRIRACE_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return Forward(Shim::Get(), &RealNccl::CommDeregister, "ncclCommDeregister", comm, handle);
}

TRIRACE_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                   int winFlags) {
  return Forward(Shim::Get(), &RealNccl::CommWindowRegister, "ncclCommWindowRegister", comm, buff, size, win,
                 winFlags);
}

TRIRACE_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return Forward(Shim::Get(), &RealNccl::CommWindowDeregister, "ncclCommWindowDeregister", comm, win);
}

TRIRACE_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                     ncclScalarResidence_t residence, ncclComm_t comm) {
  return Forward(Shim::Get(), &RealNccl::RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum", op, scalar, datatype,
                 residence, comm);
}

TRIRACE_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return Forward(Shim::Get(), &RealNccl::RedOpDestroy, "ncclRedOpDestroy", op, comm);
}

// The annotation API table; any version >= 1 gets the v1 table (its size
// and version fields tell the caller what it holds).
TRIRACE_EXPORT const trirace_api_v1_t* trirace_get_api(uint32_t version) {
  return version >= 1 ? trirace::interpose::AnnotationApi() : nullptr;
}

}  // extern "C"
