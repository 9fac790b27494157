// One call that builds a ready engine from the TRIRACE_* parameters: the
// policy (TRIRACE_POLICY), the engine options (TRIRACE_MAX_HOLD_US, ...),
// the links of the NIC link model and the occupancy reader
// (TRIRACE_OCCUPANCY) wired to the local NIC link.
//
//   auto model = std::make_shared<sched::NicLinkModel>(sched::NicLinkModel::Options::FromParams());
//   absl::StatusOr<std::unique_ptr<sched::Engine>> engine = sched::MakeEngineFromParams(&gates, *model);
//
// An occupancy source that cannot be opened is not an error: the engine
// runs without occupancy input and one INFO line says why (TRIRACE_OCCUPANCY
// =plugin|sysfs make it a WARN).
//
// Thread safety: call once per engine; the result is thread-safe (engine.h).
#ifndef TRIRACE_SCHEDULER_SETUP_H_
#define TRIRACE_SCHEDULER_SETUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "scheduler/engine.h"
#include "scheduler/link_model.h"

namespace trirace::sched {

// Links added later by `model` (new hosts) must be added with AddLink by
// the caller, in the model's order.
absl::StatusOr<std::unique_ptr<Engine>> MakeEngineFromParams(GateOpener* opener, const NicLinkModel& model,
                                                             EngineOptions options = EngineOptions::FromParams());

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_SETUP_H_
