// The INFO summary per communicator: role, op counts and bytes by function
// and by class, and time in flight (call to completion, summed).
//
// LogSummaries() prints each comm once: the ones no longer live when
// `include_live` is false (the last comm was just destroyed), every
// remaining one at exit.
//
// Thread safety: thread-safe (iterates the registry under its lock).
#ifndef TRIRACE_INTERPOSE_SUMMARY_H_
#define TRIRACE_INTERPOSE_SUMMARY_H_

#include <string>

#include "interpose/comm_registry.h"

namespace trirace::interpose {

// One comm's summary line (without the log prefix).
std::string CommSummary(const CommState& state);

void LogSummaries(const CommRegistry& registry, bool include_live);

// "12 B", "3.0 KiB", "1.5 MiB", ...
std::string HumanBytes(uint64_t bytes);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_SUMMARY_H_
