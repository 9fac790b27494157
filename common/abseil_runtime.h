// Abseil's process-wide settings for TriRace's release builds.
//
// Debian builds Abseil without NDEBUG, so by default every absl::Mutex
// acquisition also checks the process's lock graph for deadlock cycles:
// each Lock takes one process-wide spin lock and looks the mutex up in a
// hash table, and each Unlock updates the thread's held-lock list. That
// serialises the locks of every thread of the process on one spin lock
// (measured: a nested pair of uncontended locks 100-106 ns with the check,
// 26 ns without; on hostccl's stream path it was a quarter of the host
// time per op). TriRace's libraries lock on every op of a training job, so
// their release builds (NDEBUG) turn the check off once per process; debug
// builds keep it, so the test suite's debug pass still finds lock-order
// cycles.
//
// Who calls it: hostccl at its first communicator, the shim at its first
// NCCL call unless TRIRACE_MODE=off, the net plugin in its init.
//
// The setting is Abseil's, for the whole process: an application that
// links the same Abseil and wants the cycle check sets
// TRIRACE_ABSL_DEADLOCK_CHECK=1 to keep it. Turning the check back on
// after this ran is not safe in Abseil (a lock taken while it was off and
// released while it is on fails the check's bookkeeping): set the param
// instead.
//
// Thread safety: thread-safe; idempotent.
#ifndef TRIRACE_COMMON_ABSEIL_RUNTIME_H_
#define TRIRACE_COMMON_ABSEIL_RUNTIME_H_

namespace trirace {

// Release builds: absl::Mutex deadlock detection off for the process,
// unless TRIRACE_ABSL_DEADLOCK_CHECK=1. Debug builds: nothing. Returns true
// when it turned the check off.
bool ConfigureAbseilRuntime();

}  // namespace trirace

#endif  // TRIRACE_COMMON_ABSEIL_RUNTIME_H_
