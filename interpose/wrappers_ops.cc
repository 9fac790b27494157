// The ncclX definitions of the communication calls: collectives,
// point-to-point and groups. Each builds an Op and hands it to the shim's
// launcher (observe path), or forwards (off, re-entry, failure).
#include "interpose/forward.h"
#include "interpose/nccl_api.h"

using trirace::interpose::Forward;
using trirace::interpose::ForwardOp;
using trirace::NcclFunc;
using trirace::interpose::Has;
using trirace::interpose::MakeOp;
using trirace::interpose::Op;
using trirace::interpose::RealNccl;
using trirace::interpose::Shim;

extern "C" {

// One definition per call of TRIRACE_NCCL_OP_API (interpose/nccl_api.h),
// with nccl.h's signature: the Op of the call, then the observe path, or
// the real function as it is (mode off, re-entry, a failed shim).
#define TRIRACE_DEFINE_OP_WRAPPER(Name, params, fields, real_call)                              \
  TRIRACE_EXPORT ncclResult_t nccl##Name params {                                               \
    Op o = MakeOp(NcclFunc::k##Name, TRIRACE_NCCL_UNPAREN fields, comm, stream);                \
    Shim& shim = Shim::Get();                                                                   \
    if (!shim.ShouldRecord() || !Has(shim, &RealNccl::Name)) return ForwardOp(shim, o, "nccl" #Name); \
    return shim.IssueOp(o);                                                                     \
  }
TRIRACE_NCCL_OP_API(TRIRACE_DEFINE_OP_WRAPPER)
#undef TRIRACE_DEFINE_OP_WRAPPER

TRIRACE_EXPORT ncclResult_t ncclGroupStart() {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::GroupStart)) {
    return Forward(shim, &RealNccl::GroupStart, "ncclGroupStart");
  }
  return shim.GroupStart();
}

TRIRACE_EXPORT ncclResult_t ncclGroupEnd() {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::GroupEnd)) {
    return Forward(shim, &RealNccl::GroupEnd, "ncclGroupEnd");
  }
  return shim.GroupEnd();
}

TRIRACE_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  Shim& shim = Shim::Get();
  if (!shim.ShouldRecord() || !Has(shim, &RealNccl::GroupSimulateEnd)) {
    return Forward(shim, &RealNccl::GroupSimulateEnd, "ncclGroupSimulateEnd", simInfo);
  }
  return shim.GroupSimulateEnd(simInfo);
}

}  // extern "C"
