// NCCL traffic classes per communicator role (TRIRACE_COMM_TRAFFIC_CLASS).
//
// Where TriRace's net plugin is not the transport (InfiniBand through NCCL's
// own IB transport, or another plugin that TriRace wraps), the only class
// priority on the wire is the one NCCL applies from ncclConfig_t.
// trafficClass (the IB GRH traffic class / the TOS byte of a socket; our
// plugin honours it too). The shim fills that field when a communicator is
// created with a known role: the role the creating thread declared with
// trirace_set_new_comm_role() (include/trirace/trirace.h). It does so only
// in schedule mode, on its own copy of the caller's config (CopyConfig: never
// reading or writing past the caller's `size`), and never over a
// trafficClass the caller set. A comm whose role is not known at creation
// (declared later with trirace_set_comm_role, or inferred from traffic)
// keeps NCCL's default: the class is fixed for the comm's life.
//
// The mapping, TRIRACE_COMM_TRAFFIC_CLASS:
//   ""     (default) never set trafficClass
//   "auto" pipeline and tensor 184 (DSCP EF), expert 0, data-parallel 32
//          (DSCP CS1): the marks the net plugin's class priority uses
//   "role=class,..." explicit, roles data-parallel (or data_parallel),
//          pipeline, tensor, expert; classes 0..255; roles not named keep
//          NCCL's default.
//
// Thread safety: ParseRoleTrafficClasses is pure; RoleTrafficClasses reads
// the parameter once (thread-safe static) and logs one WARN for a bad value.
#ifndef TRIRACE_INTERPOSE_COMM_COMM_TRAFFIC_CLASS_H_
#define TRIRACE_INTERPOSE_COMM_COMM_TRAFFIC_CLASS_H_

#include <array>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nccl.h"
#include "trirace/trirace.h"

namespace trirace::interpose {

inline constexpr int kNoTrafficClass = -1;

// Index: trirace_role_t (0..TRIRACE_ROLE_EXPERT); kNoTrafficClass = leave it.
using RoleTrafficClasses = std::array<int, TRIRACE_ROLE_EXPERT + 1>;

// Parses a TRIRACE_COMM_TRAFFIC_CLASS value; the error names the bad item
// and what is accepted.
absl::StatusOr<RoleTrafficClasses> ParseRoleTrafficClasses(absl::string_view text);

// The process's mapping from TRIRACE_COMM_TRAFFIC_CLASS (all kNoTrafficClass
// when unset or invalid).
const RoleTrafficClasses& ConfiguredRoleTrafficClasses();

// The config to create a comm of `role` with: `caller` unchanged when
// nothing is to be set (no class for the role, the caller set one, or the
// caller's struct is not an initialised ncclConfig_t), else `storage`, a
// copy of the caller's config (NCCL's defaults for a NULL caller) with
// trafficClass set. *traffic_class receives the class set, or
// kNoTrafficClass.
const ncclConfig_t* ConfigWithRoleTrafficClass(const ncclConfig_t* caller, int role,
                                               const RoleTrafficClasses& classes, ncclConfig_t* storage,
                                               int* traffic_class);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMM_COMM_TRAFFIC_CLASS_H_
