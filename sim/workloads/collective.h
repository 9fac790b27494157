// A single collective as a workload, for `trirace sim --collective`: what
// nccl-tests measures, on a simulated cluster.
//
// `bytes` is nccl-tests' size: AllReduce the buffer, AllGather the whole
// output (each rank contributes bytes / n), ReduceScatter the whole input
// (each rank keeps bytes / n), AlltoAll each rank's send buffer (bytes / n
// per peer), SendRecv the message each rank sends to the next rank (and
// receives from the previous one, in one group). Every rank calls it once
// per iteration on one communicator of `ranks` ranks (0, 1, ...).
//
// Bandwidths as nccl-tests defines them: algbw = bytes / time; busbw =
// algbw x 2(n-1)/n (AllReduce), (n-1)/n (AllGather, ReduceScatter,
// AlltoAll), 1 (SendRecv).
//
// Thread safety: pure.
#ifndef TRIRACE_SIM_WORKLOADS_COLLECTIVE_H_
#define TRIRACE_SIM_WORKLOADS_COLLECTIVE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/nccl_func.h"
#include "sim/program/program.h"

namespace trirace::sim {

struct CollectiveSpec {
  NcclFunc func = NcclFunc::kAllReduce;  // kSend stands for SendRecv
  uint64_t bytes = 0;
  int ranks = 2;
  int iterations = 1;
};

// allreduce, allgather, reducescatter, alltoall, sendrecv (kSend).
std::optional<NcclFunc> CollectiveFromName(const std::string& name);
double BusBandwidthFactor(NcclFunc func, int ranks);

absl::StatusOr<Workload> CollectiveWorkload(const CollectiveSpec& spec);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_WORKLOADS_COLLECTIVE_H_
