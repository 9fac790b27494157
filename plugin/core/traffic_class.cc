#include "plugin/core/traffic_class.h"

#include "plugin/abi/net_abi.h"
#include "trirace/trirace.h"

namespace trirace::net {
namespace {

constexpr uint32_t Bit(int func) { return 1u << func; }

}  // namespace

TrafficClass ClassForOpMask(uint32_t op) {
  if (op == 0 || op == static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF)) return TrafficClass::kOther;
  constexpr uint32_t kP2p =
      Bit(TRIRACE_NCCL_FUNC_SENDRECV) | Bit(TRIRACE_NCCL_FUNC_SEND) | Bit(TRIRACE_NCCL_FUNC_RECV);
  constexpr uint32_t kSparse = Bit(TRIRACE_NCCL_FUNC_ALLGATHER) | Bit(TRIRACE_NCCL_FUNC_ALLTOALL) |
                               Bit(TRIRACE_NCCL_FUNC_GATHER) | Bit(TRIRACE_NCCL_FUNC_SCATTER);
  constexpr uint32_t kDense = Bit(TRIRACE_NCCL_FUNC_ALLREDUCE) | Bit(TRIRACE_NCCL_FUNC_REDUCESCATTER) |
                              Bit(TRIRACE_NCCL_FUNC_REDUCE) | Bit(TRIRACE_NCCL_FUNC_BROADCAST);
  if (op & kP2p) return TrafficClass::kP2P;
  if (op & kSparse) return TrafficClass::kSparse;
  if (op & kDense) return TrafficClass::kDense;
  return TrafficClass::kOther;
}

std::optional<ClassMarks> MarksForClass(TrafficClass cls, bool dense_ahead) {
  if (cls == TrafficClass::kDense && dense_ahead) cls = TrafficClass::kSparse;
  switch (cls) {
    case TrafficClass::kP2P: return ClassMarks{46 << 2, 6};   // EF, TC_PRIO_INTERACTIVE: band 0
    case TrafficClass::kSparse: return ClassMarks{0, 0};      // default, TC_PRIO_BESTEFFORT: band 1
    case TrafficClass::kDense: return ClassMarks{8 << 2, 1};  // CS1, TC_PRIO_FILLER: band 2
    case TrafficClass::kOther: return std::nullopt;
  }
  return std::nullopt;
}

bool DenseAheadOfHost() { return trirace_dense_ahead() != 0; }

}  // namespace trirace::net
