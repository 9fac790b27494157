// The ncclX definitions that are forwarded without being recorded: version,
// unique id, error strings, queries, memory and buffer registration, custom
// reduction ops. Plus trirace_get_api, the annotation API entry point.
// Those that take a comm refuse one the shim knows is not a live comm
// (Shim::CheckComm); ncclGetLastError passes its comm on (NCCL does not read it).
#include "interpose/annotations.h"
#include "interpose/forward.h"
#include "trirace/trirace.h"

using trirace::interpose::Forward;
using trirace::interpose::ForwardOnComm;
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
  return ForwardOnComm(Shim::Get(), &RealNccl::CommGetAsyncError, "ncclCommGetAsyncError", comm, comm, asyncError);
}

TRIRACE_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return ForwardOnComm(Shim::Get(), &RealNccl::CommCount, "ncclCommCount", comm, comm, count);
}

TRIRACE_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return ForwardOnComm(Shim::Get(), &RealNccl::CommCuDevice, "ncclCommCuDevice", comm, comm, device);
}

TRIRACE_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return ForwardOnComm(Shim::Get(), &RealNccl::CommUserRank, "ncclCommUserRank", comm, comm, rank);
}

TRIRACE_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return ForwardOnComm(Shim::Get(), &RealNccl::CommRegister, "ncclCommRegister", comm, comm, buff, size, handle);
}

TRIRACE_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return ForwardOnComm(Shim::Get(), &RealNccl::CommDeregister, "ncclCommDeregister", comm, comm, handle);
}

TRIRACE_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                   int winFlags) {
  return ForwardOnComm(Shim::Get(), &RealNccl::CommWindowRegister, "ncclCommWindowRegister", comm, comm, buff, size,
                       win, winFlags);
}

TRIRACE_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return ForwardOnComm(Shim::Get(), &RealNccl::CommWindowDeregister, "ncclCommWindowDeregister", comm, comm, win);
}

TRIRACE_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                     ncclScalarResidence_t residence, ncclComm_t comm) {
  return ForwardOnComm(Shim::Get(), &RealNccl::RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum", comm, op, scalar,
                       datatype, residence, comm);
}

TRIRACE_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return ForwardOnComm(Shim::Get(), &RealNccl::RedOpDestroy, "ncclRedOpDestroy", comm, op, comm);
}

// The annotation API table; any version >= 1 gets the v1 table (its size
// and version fields tell the caller what it holds).
TRIRACE_EXPORT const trirace_api_v1_t* trirace_get_api(uint32_t version) {
  return version >= 1 ? trirace::interpose::AnnotationApi() : nullptr;
}

}  // extern "C"
