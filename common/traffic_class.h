// The traffic classes of the design (docs/design.md), one definition for
// every module: the shim classifies ops into them, the scheduler holds and
// releases by them, the net plugin marks and counts by them.
//
// The values are trirace_class_t's (include/trirace/trirace.h), so an
// annotation's class, an occupancy counter index and this enum agree:
// TRIRACE_CLASS_AUTO (0) stands for kOther, traffic nobody classified.
// TrafficClassFromAbi() is the one place an ABI value becomes a class.
//
// Thread safety: constants and pure functions.
#ifndef TRIRACE_COMMON_TRAFFIC_CLASS_H_
#define TRIRACE_COMMON_TRAFFIC_CLASS_H_

#include <cstdint>
#include <optional>

#include "trirace/trirace.h"

namespace trirace {

enum class TrafficClass : uint8_t {
  kOther = TRIRACE_CLASS_AUTO,     // unclassified traffic
  kP2P = TRIRACE_CLASS_P2P,        // pipeline activations / activation gradients: never held
  kSparse = TRIRACE_CLASS_SPARSE,  // embedding rows, MoE tokens: ahead of dense
  kDense = TRIRACE_CLASS_DENSE,    // gradient all-reduce / reduce-scatter: released into gaps
};
inline constexpr int kNumTrafficClasses = 4;

// Index of `c` in per-class arrays (0 .. kNumTrafficClasses - 1).
inline constexpr int ClassIndex(TrafficClass c) { return static_cast<int>(c); }

// "P2P", "SPARSE", "DENSE", "OTHER".
const char* TrafficClassName(TrafficClass c);

// The class an annotation or a trace record names (a trirace_class_t
// value): P2P, SPARSE or DENSE; nullopt for AUTO, UNSET or a value outside
// the enum, where the caller decides (from the comm's role and the call).
std::optional<TrafficClass> TrafficClassFromAbi(int32_t value);

// Of two classes, the one a policy holds least: P2P, then SPARSE, then
// OTHER, then DENSE (a group of ops is as urgent as its most urgent op).
TrafficClass MoreUrgent(TrafficClass a, TrafficClass b);

}  // namespace trirace

#endif  // TRIRACE_COMMON_TRAFFIC_CLASS_H_
