// Which TriRace traffic class a transfer serves, from the op mask NCCL
// passes in ncclNetAttr_v11_t (op = 1u << ncclFunc):
//   Send/Recv/SendRecv                       -> TRIRACE_CLASS_P2P
//   AllGather/AlltoAll/Gather/Scatter        -> TRIRACE_CLASS_SPARSE
//   AllReduce/ReduceScatter/Reduce/Broadcast -> TRIRACE_CLASS_DENSE
//   no hint (0 or NCCL_NET_ATTR_UNDEF)       -> 0 (unattributed)
// The occupancy segment keeps one counter set per class.
//
// Class priority (TRIRACE_NET_CLASS_PRIORITY): with it on, the core sets a
// send comm's socket priority from the class of each send, so that a
// priority queue at the NIC (a pfifo_fast/prio qdisc, or a NIC's traffic
// classes) moves pipeline activations ahead of bulk gradients on the wire,
// packet by packet, instead of sharing the link with them. Linux maps
// SO_PRIORITY to pfifo_fast bands through the default priomap
// (1 2 2 2 1 2 0 0 ...): 6 -> band 0, 0 -> band 1, 1 -> band 2.
#ifndef TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_
#define TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_

#include <cstdint>

namespace trirace::net {

int ClassForOpMask(uint32_t op);

// The SO_PRIORITY for a send of class `cls` (a ClassForOpMask() value):
// P2P 6, SPARSE 0, DENSE 1; -1 for an unattributed send (leave it as is).
int SocketPriorityForClass(int cls);

// Whether class priority is on: TRIRACE_NET_CLASS_PRIORITY=on, or auto with
// TRIRACE_MODE=schedule and TRIRACE_POLICY=trirace.
bool ClassPriorityEnabled();

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_
