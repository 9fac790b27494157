// The exported NCCL collective and point-to-point functions: NCCL-style
// argument checks, then an enqueue onto the host stream.
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "hostccl/src/api_util.h"
#include "hostccl/src/group.h"

namespace trirace::hostccl {
namespace {

struct Call {
  const char* name;
  NcclFunc func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;       // reductions only
  int root;             // root or peer; -1 when unused
  ncclComm_t comm;
  cudaStream_t stream;
};

bool Reduces(NcclFunc f) {
  return f == NcclFunc::kAllReduce || f == NcclFunc::kReduce || f == NcclFunc::kReduceScatter;
}

absl::Status Check(const Call& c, const CommCore& core, OpDesc* op) {
  int t = static_cast<int>(c.type);
  if (t < 0 || t >= ncclNumTypes) {
    return absl::InvalidArgumentError(absl::StrFormat("datatype=%d is not an ncclDataType_t (0..%d)", t, ncclNumTypes - 1));
  }
  if (!TypeSupported(c.type)) {
    return absl::InvalidArgumentError(absl::StrFormat("datatype=%s is not supported by hostccl (fp8 types are not)", TypeName(c.type)));
  }
  const int n = core.nranks();
  bool p2p = c.func == NcclFunc::kSend || c.func == NcclFunc::kRecv;
  if ((HasRoot(c.func) || p2p) && (c.root < 0 || c.root >= n)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s=%d is out of range for a communicator of %d ranks",
                                                      p2p ? "peer" : "root", c.root, n));
  }
  // The largest buffer involved holds count * nranks elements for the
  // gathering/scattering collectives.
  size_t factor = (c.func == NcclFunc::kAllGather || c.func == NcclFunc::kReduceScatter || c.func == NcclFunc::kAlltoAll ||
                   c.func == NcclFunc::kGather || c.func == NcclFunc::kScatter)
                      ? static_cast<size_t>(n) : 1;
  size_t bytes = 0;
  if (__builtin_mul_overflow(c.count, DataTypeSize(c.type) * factor, &bytes)) {
    return absl::InvalidArgumentError(absl::StrFormat("count=%zu of %s overflows the address space", c.count, TypeName(c.type)));
  }
  if (c.count > 0) {
    bool root = core.rank() == c.root;
    bool needs_send = c.func != NcclFunc::kRecv && !(c.func == NcclFunc::kBroadcast && !root) && !(c.func == NcclFunc::kScatter && !root);
    bool needs_recv = c.func != NcclFunc::kSend && !(c.func == NcclFunc::kReduce && !root) && !(c.func == NcclFunc::kGather && !root);
    if (needs_send && c.sendbuff == nullptr) return absl::InvalidArgumentError("sendbuff is NULL");
    if (needs_recv && c.recvbuff == nullptr) return absl::InvalidArgumentError("recvbuff is NULL");
  }
  op->func = c.func;
  op->sendbuff = c.sendbuff;
  op->recvbuff = c.recvbuff;
  op->count = c.count;
  op->type = c.type;
  op->root = c.root;
  if (Reduces(c.func)) TRIRACE_RETURN_IF_ERROR(core.ResolveRedOp(c.op, c.type, op));
  return absl::OkStatus();
}

ncclResult_t Enqueue(const Call& c) {
  absl::StatusOr<std::shared_ptr<CommCore>> core = ReadyComm(c.comm);
  if (!core.ok()) return ApiResult(c.name, core.status());
  OpDesc op;
  absl::Status s = Check(c, **core, &op);
  if (!s.ok()) return ApiResult(c.name, s);
  absl::StatusOr<std::shared_ptr<HostStream>> stream = LookupStream(c.stream, "stream");
  if (!stream.ok()) return ApiResult(c.name, stream.status());
  return ApiResult(c.name, EnqueueOp(*core, op, *stream));
}

}  // namespace
}  // namespace trirace::hostccl

using namespace trirace::hostccl;  // NOLINT: the C ABI lives in the global namespace
using trirace::NcclFunc;

extern "C" {

TRIRACE_EXPORT ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclAllReduce", NcclFunc::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                           int root, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclBroadcast", NcclFunc::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  return Enqueue({"ncclBcast", NcclFunc::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclReduce", NcclFunc::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclAllGather", NcclFunc::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                               cudaStream_t stream) {
  return Enqueue({"ncclReduceScatter", NcclFunc::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclAlltoAll", NcclFunc::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, -1, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclGather", NcclFunc::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         int root, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclScatter", NcclFunc::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                      ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclSend", NcclFunc::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream});
}

TRIRACE_EXPORT ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                      ncclComm_t comm, cudaStream_t stream) {
  return Enqueue({"ncclRecv", NcclFunc::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream});
}

}  // extern "C"

HOSTCCL_WEAK_ALIAS(ncclAllReduce)
HOSTCCL_WEAK_ALIAS(ncclBroadcast)
HOSTCCL_WEAK_ALIAS(ncclBcast)
HOSTCCL_WEAK_ALIAS(ncclReduce)
HOSTCCL_WEAK_ALIAS(ncclAllGather)
HOSTCCL_WEAK_ALIAS(ncclReduceScatter)
HOSTCCL_WEAK_ALIAS(ncclAlltoAll)
HOSTCCL_WEAK_ALIAS(ncclGather)
HOSTCCL_WEAK_ALIAS(ncclScatter)
HOSTCCL_WEAK_ALIAS(ncclSend)
HOSTCCL_WEAK_ALIAS(ncclRecv)
