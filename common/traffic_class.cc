#include "common/traffic_class.h"

namespace trirace {
namespace {

// Lower holds less.
int HoldRank(TrafficClass c) {
  switch (c) {
    case TrafficClass::kP2P: return 0;
    case TrafficClass::kSparse: return 1;
    case TrafficClass::kOther: return 2;
    case TrafficClass::kDense: return 3;
  }
  return 3;
}

}  // namespace

const char* TrafficClassName(TrafficClass c) {
  switch (c) {
    case TrafficClass::kP2P: return "P2P";
    case TrafficClass::kSparse: return "SPARSE";
    case TrafficClass::kDense: return "DENSE";
    case TrafficClass::kOther: return "OTHER";
  }
  return "?";
}

std::optional<TrafficClass> TrafficClassFromAbi(int32_t value) {
  switch (value) {
    case TRIRACE_CLASS_P2P: return TrafficClass::kP2P;
    case TRIRACE_CLASS_SPARSE: return TrafficClass::kSparse;
    case TRIRACE_CLASS_DENSE: return TrafficClass::kDense;
    default: return std::nullopt;
  }
}

TrafficClass MoreUrgent(TrafficClass a, TrafficClass b) { return HoldRank(a) <= HoldRank(b) ? a : b; }

}  // namespace trirace
