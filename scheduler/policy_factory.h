// The one place a policy kind (TRIRACE_POLICY) becomes a policy object,
// configured from the params registry. The shim's engine factory
// (interpose/gate/engine_factory.h) and the simulator (sim/) both call it, so
// both run the same policy objects with the same settings.
//
//   std::unique_ptr<sched::Policy> p = sched::MakePolicy(PolicyKind::kTrirace);
//
// Thread safety: reads the params registry (itself thread-safe).
#ifndef TRIRACE_SCHEDULER_POLICY_FACTORY_H_
#define TRIRACE_SCHEDULER_POLICY_FACTORY_H_

#include <memory>
#include <optional>

#include "common/params.h"
#include "scheduler/engine.h"
#include "scheduler/policy.h"

namespace trirace::sched {

// Settings a caller decides itself rather than take from the params: the
// simulator runs `wire` and `gate` side by side in one process, so whether
// the wire has class priority is its mode's, not TRIRACE_NET_CLASS_PRIORITY's.
struct PolicyOverrides {
  std::optional<bool> wire_class_priority;  // trirace's [R10]
};

// The policy of `kind`, configured from the TRIRACE_* params (each
// policy's Config::FromParams()), then `overrides`.
std::unique_ptr<Policy> MakePolicy(PolicyKind kind, const PolicyOverrides& overrides = {});

// `options` for an engine running `kind`: online tuning stays on only
// under trirace, the one policy that reads the tuner's factors.
EngineOptions EngineOptionsFor(PolicyKind kind, EngineOptions options);

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_POLICY_FACTORY_H_
