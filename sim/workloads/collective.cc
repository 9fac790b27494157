#include "sim/workloads/collective.h"

#include "absl/strings/str_cat.h"

namespace trirace::sim {

std::optional<NcclFunc> CollectiveFromName(const std::string& name) {
  if (name == "allreduce") return NcclFunc::kAllReduce;
  if (name == "allgather") return NcclFunc::kAllGather;
  if (name == "reducescatter") return NcclFunc::kReduceScatter;
  if (name == "alltoall") return NcclFunc::kAlltoAll;
  if (name == "sendrecv") return NcclFunc::kSend;
  return std::nullopt;
}

double BusBandwidthFactor(NcclFunc func, int n) {
  switch (func) {
    case NcclFunc::kAllReduce: return 2.0 * (n - 1) / n;
    case NcclFunc::kAllGather:
    case NcclFunc::kReduceScatter:
    case NcclFunc::kAlltoAll: return double(n - 1) / n;
    default: return 1;
  }
}

absl::StatusOr<Workload> CollectiveWorkload(const CollectiveSpec& s) {
  if (s.ranks < 2) return absl::InvalidArgumentError(absl::StrCat("--ranks ", s.ranks, ": expected >= 2"));
  if (s.bytes == 0) return absl::InvalidArgumentError("--bytes 0: expected a size > 0");
  if (s.iterations < 1) return absl::InvalidArgumentError(absl::StrCat("--iterations ", s.iterations, ": expected >= 1"));
  const int n = s.ranks;
  const bool per_rank = s.func == NcclFunc::kAllGather || s.func == NcclFunc::kReduceScatter || s.func == NcclFunc::kAlltoAll;
  if (per_rank && s.bytes < uint64_t(n)) {
    return absl::InvalidArgumentError(absl::StrCat("--bytes ", s.bytes, ": at least one byte per rank (", n, ")"));
  }
  Workload w;
  w.name = absl::StrCat(s.func == NcclFunc::kSend ? "SendRecv" : NcclFuncName(s.func), " ", s.bytes, " bytes on ", n, " ranks");
  w.iterations = s.iterations;
  CommSpec comm{"world", {}, s.func == NcclFunc::kSend ? TrafficClass::kP2P : TrafficClass::kDense, false};
  for (int r = 0; r < n; ++r) comm.ranks.push_back(r);
  w.comms.push_back(comm);
  for (int r = 0; r < n; ++r) {
    ProgramBuilder b(1);
    b.Stamp(0, 0);
    for (int it = 0; it < s.iterations; ++it) {
      b.IterationBegin(it);
      NcclCall c;
      c.comm = 0;
      if (s.func == NcclFunc::kSend) {
        NcclCall send = c, recv = c;
        send.func = NcclFunc::kSend;
        send.peer = (r + 1) % n;
        send.bytes = s.bytes;
        recv.func = NcclFunc::kRecv;
        recv.peer = (r + n - 1) % n;
        recv.bytes = s.bytes;
        b.Comm(0, {send, recv});
      } else {
        c.func = s.func;
        c.bytes = per_rank ? s.bytes / uint64_t(n) : s.bytes;
        if (s.func == NcclFunc::kAlltoAll) c.reduce = sched::ReduceKind::kNone;
        b.Comm(0, {c});
      }
      b.Stamp(0, it + 1);
    }
    w.ranks.push_back(b.Take());
  }
  return w;
}

}  // namespace trirace::sim
