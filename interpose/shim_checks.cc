// The argument checks the shim makes itself before a call reaches the real
// library (shim.h: CheckComm, RefuseOp): a comm that is not a live one, and
// a count whose bytes do not fit in size_t. Everything else the real
// library checks and reports.
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "interpose/comm/comm_state.h"
#include "interpose/comm/user_group.h"
#include "interpose/shim.h"

namespace trirace::interpose {
namespace {

constexpr char kCreators[] =
    "ncclCommInitRank, ncclCommInitRankConfig, ncclCommInitRankScalable, ncclCommInitAll, ncclCommSplit or "
    "ncclCommShrink";

// How a refusal ends, inside a group or not.
const char* RefusalTail(bool in_group) {
  return in_group ? "; refused with ncclInvalidArgument (inside a group NCCL gets the call with comm=NULL, so "
                    "that it fails the whole group as it fails a group with any bad call)"
                  : "; refused with ncclInvalidArgument, not passed to NCCL";
}

// The buffer that holds one part per rank: count * nranks elements.
bool CountsPerRank(NcclFunc f) {
  switch (f) {
    case NcclFunc::kAllGather:
    case NcclFunc::kReduceScatter:
    case NcclFunc::kAlltoAll:
    case NcclFunc::kGather:
    case NcclFunc::kScatter:
      return true;
    default:
      return false;
  }
}

}  // namespace

ncclResult_t Shim::CheckComm(ncclComm_t comm, const char* function, bool group_call) {
  if (comm == nullptr || registry_.Find(comm) != nullptr) return ncclSuccess;
  const char* how = nullptr;
  const CommLedger::Verdict verdict = ledger_.Check(comm, &how);
  if (verdict != CommLedger::Verdict::kNever && verdict != CommLedger::Verdict::kDestroyed) return ncclSuccess;
  const bool in_group = group_call && ThisThreadGroup().depth() > 0;
  if (verdict == CommLedger::Verdict::kDestroyed) {
    TRIRACE_WARN(INTERPOSE, "%s: comm=%p was destroyed by %s, and NCCL would read freed memory (accepted: a live "
                 "communicator)%s", function, static_cast<void*>(comm), how, RefusalTail(in_group));
  } else {
    TRIRACE_WARN(INTERPOSE, "%s: comm=%p is not a communicator: no %s of this process returned it, and NCCL would "
                 "read through it (accepted: a live communicator)%s", function, static_cast<void*>(comm), kCreators,
                 RefusalTail(in_group));
  }
  return ncclInvalidArgument;
}

bool Shim::RefuseOp(Op& op, ncclResult_t* result) {
  const size_t es = DataTypeSize(op.datatype);  // 0 for an unknown datatype, which the real library reports
  const bool overflows = __builtin_mul_overflow(op.count, es, &op.bytes);
  const int nranks = op.state != nullptr && CountsPerRank(op.func) ? op.state->nranks : 1;
  size_t all_parts = 0;
  const bool parts_overflow = !overflows && nranks > 1 &&
                              __builtin_mul_overflow(op.bytes, static_cast<size_t>(nranks), &all_parts);
  if (op.state != nullptr && !overflows && !parts_overflow) [[likely]] return false;
  const std::string function = absl::StrCat("nccl", NcclFuncName(op.func));
  ncclResult_t refused = op.state == nullptr ? CheckComm(op.comm, function.c_str(), /*group_call=*/true) : ncclSuccess;
  const bool in_group = ThisThreadGroup().depth() > 0;
  if (refused == ncclSuccess && (overflows || parts_overflow)) {
    const uint64_t per_element = static_cast<uint64_t>(es) * static_cast<uint64_t>(nranks);
    TRIRACE_WARN(INTERPOSE, "%s: count=%d of %s (%d bytes each%s) is more bytes than size_t holds, and NCCL would "
                 "size its work with the wrapped number (accepted: count <= %d)%s", function, op.count,
                 DataTypeName(op.datatype), es, nranks > 1 ? absl::StrCat(", one part per rank of ", nranks) : "",
                 SIZE_MAX / per_element, RefusalTail(in_group));
    refused = ncclInvalidArgument;
  }
  if (refused == ncclSuccess) return false;
  if (in_group && real_ != nullptr) {
    Op poisoned = op;
    poisoned.comm = nullptr;
    CallReal(*real_, poisoned);  // the real library fails the group; this call's result is ncclInvalidArgument
  }
  *result = refused;
  return true;
}

}  // namespace trirace::interpose
