// Which TriRace traffic class a transfer serves, from the op mask NCCL
// passes in ncclNetAttr_v11_t (op = 1u << ncclFunc):
//   Send/Recv/SendRecv                       -> TRIRACE_CLASS_P2P
//   AllGather/AlltoAll/Gather/Scatter        -> TRIRACE_CLASS_SPARSE
//   AllReduce/ReduceScatter/Reduce/Broadcast -> TRIRACE_CLASS_DENSE
//   no hint (0 or NCCL_NET_ATTR_UNDEF)       -> 0 (unattributed)
// The occupancy segment keeps one counter set per class.
#ifndef TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_
#define TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_

#include <cstdint>

namespace trirace::net {

int ClassForOpMask(uint32_t op);

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_
