#include "plugin/core/traffic_class.h"

#include "plugin/abi/net_abi.h"
#include "trirace/trirace.h"

namespace trirace::net {
namespace {

constexpr uint32_t Bit(int func) { return 1u << func; }

}  // namespace

int ClassForOpMask(uint32_t op) {
  if (op == 0 || op == static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF)) return 0;
  constexpr uint32_t kP2p =
      Bit(TRIRACE_NCCL_FUNC_SENDRECV) | Bit(TRIRACE_NCCL_FUNC_SEND) | Bit(TRIRACE_NCCL_FUNC_RECV);
  constexpr uint32_t kSparse = Bit(TRIRACE_NCCL_FUNC_ALLGATHER) | Bit(TRIRACE_NCCL_FUNC_ALLTOALL) |
                               Bit(TRIRACE_NCCL_FUNC_GATHER) | Bit(TRIRACE_NCCL_FUNC_SCATTER);
  constexpr uint32_t kDense = Bit(TRIRACE_NCCL_FUNC_ALLREDUCE) | Bit(TRIRACE_NCCL_FUNC_REDUCESCATTER) |
                              Bit(TRIRACE_NCCL_FUNC_REDUCE) | Bit(TRIRACE_NCCL_FUNC_BROADCAST);
  if (op & kP2p) return TRIRACE_CLASS_P2P;
  if (op & kSparse) return TRIRACE_CLASS_SPARSE;
  if (op & kDense) return TRIRACE_CLASS_DENSE;
  return 0;
}

std::optional<ClassMarks> MarksForClass(int cls) {
  switch (cls) {
    case TRIRACE_CLASS_P2P: return ClassMarks{46 << 2, 6};   // EF, TC_PRIO_INTERACTIVE: band 0
    case TRIRACE_CLASS_SPARSE: return ClassMarks{0, 0};      // default, TC_PRIO_BESTEFFORT: band 1
    case TRIRACE_CLASS_DENSE: return ClassMarks{8 << 2, 1};  // CS1, TC_PRIO_FILLER: band 2
    default: return std::nullopt;
  }
}

}  // namespace trirace::net
