// The simulator's modes: the names bench/e2e uses, what each one turns on,
// and the two references every figure stands next to.
//
//   off       no shim: every call runs on its stream as issued; links share
//             all traffic alike (one queue).
//   fifo      schedule mode, fifo policy (gates open at once).
//   priority  schedule mode, priority policy (ByteScheduler-like window).
//   wire      no gating; the net plugin marks classes, and the links whose
//             queues honour them (the cluster's Qos) serve P2P, then SPARSE
//             (and unclassified), then DENSE: what network priority alone
//             gives.
//   gate      schedule mode, trirace policy, no class marks: the scheduler
//             alone, as on a fabric with one queue (rule [R14] through
//             [R13]'s gauge).
//   trirace   schedule mode, trirace policy, class marks on the wire (rule
//             [R10]) and the front stage's DENSE marked like SPARSE ([R14])
//             where the cluster's queues honour them; where none does
//             (Qos::kNone) no marks, and the policy gates alone, as `gate`:
//             TRIRACE_NET_CLASS_PRIORITY=auto decides as the shim does from
//             the hosts' qdiscs (common/qdisc.h); on / off force it.
//   ideal     strict class priority with free preemption on every link,
//             whatever the cluster's Qos (the target in every setting), and
//             [R14]'s front stage first: what TriRace's strategy can reach
//             at best (bench/e2e's ideal).
// `bound` is not a mode but a figure: the larger of the iteration with every
// link unlimited (compute and dependencies alone) and the busiest link's
// bytes per iteration at its rate. No schedule beats it.
//
// Thread safety: constants and pure functions.
#ifndef TRIRACE_SIM_RUN_MODE_H_
#define TRIRACE_SIM_RUN_MODE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/params.h"
#include "sim/cluster/cluster.h"

namespace trirace::sim {

enum class Mode { kOff, kFifo, kPriority, kWire, kGate, kTrirace, kIdeal };

struct ModeSettings {
  bool gated = false;              // schedule mode: gates and the real engine
  PolicyKind policy = PolicyKind::kTrirace;
  bool class_marks = false;        // the plugin marks classes; engines count on them ([R10])
  bool every_link_honours = false; // ideal: strict priority on every link, whatever the Qos
  bool front_stage_marks = false;  // [R14] on the wire: front DENSE at SPARSE's level
  bool front_stage_gauge = false;  // [R14] without marks: [R13]'s gauge carries other DENSE
};

std::string_view ModeName(Mode m);
std::optional<Mode> ModeFromName(std::string_view name);
// All modes, in the order of the tables.
std::vector<Mode> AllModes();
// What `m` turns on on a cluster whose queues are `qos`. [R14] follows
// TRIRACE_FRONT_STAGE_FIRST as the shim does (auto: with the trirace
// policy).
ModeSettings SettingsOf(Mode m, Qos qos);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_RUN_MODE_H_
