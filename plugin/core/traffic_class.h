// Which TriRace traffic class a transfer serves, from the op mask NCCL
// passes in ncclNetAttr_v11_t (op = 1u << ncclFunc):
//   Send/Recv/SendRecv                       -> TrafficClass::kP2P
//   AllGather/AlltoAll/Gather/Scatter        -> TrafficClass::kSparse
//   AllReduce/ReduceScatter/Reduce/Broadcast -> TrafficClass::kDense
//   no hint (0 or NCCL_NET_ATTR_UNDEF)       -> TrafficClass::kOther
// The occupancy segment keeps one counter set per class, at ClassIndex().
//
// Class priority (TRIRACE_NET_CLASS_PRIORITY): with it on, the core marks
// a send comm's sockets from the class of each send, so that priority
// queues on the path move pipeline activations ahead of bulk gradients on
// the wire, packet by packet, instead of sharing the link with them. Two
// marks, because they serve different hops:
//  * SO_PRIORITY picks the band of the sending host's own queue: Linux's
//    default priomap (pfifo_fast, prio: 1 2 2 2 1 2 0 0 ...) puts 6 in
//    band 0, 0 in band 1 and 1 in band 2;
//  * the IP DSCP is what switches (and the test bed's fabric) classify by,
//    as the socket priority does not leave the host: EF (46) for P2P,
//    default (0) for SPARSE, CS1 (8, "lower effort") for DENSE.
#ifndef TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_
#define TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_

#include <cstdint>
#include <optional>

#include "common/traffic_class.h"

namespace trirace::net {

TrafficClass ClassForOpMask(uint32_t op);

// The marks of a send of class `cls` (a ClassForOpMask() value):
// P2P {TOS 0xb8 (DSCP EF), priority 6}, SPARSE {0, 0}, DENSE {0x20 (DSCP
// CS1), 1}, or SPARSE's with `dense_ahead` (rule [R14]: this process holds
// its host's front pipeline stage, DenseAheadOfHost()); nullopt for an
// unattributed (kOther) send (leave the sockets as they are). Whether class
// priority is on: NetClassPriorityEnabled() (common/params.h).
struct ClassMarks {
  int tos;
  int priority;
  bool operator==(const ClassMarks&) const = default;
};
std::optional<ClassMarks> MarksForClass(TrafficClass cls, bool dense_ahead = false);

// Whether the TriRace shim in this process says its DENSE goes ahead of the
// host's other DENSE (trirace_dense_ahead(), include/trirace/trirace.h);
// false without the shim. After the first call: a cached table, one
// indirect call and one atomic load.
bool DenseAheadOfHost();

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_TRAFFIC_CLASS_H_
