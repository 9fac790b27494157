// The INFO summary per communicator: role, op counts and bytes by function
// and by class, and time in flight (call to completion, summed); and one
// line for the trace buffer (TRIRACE_TRACE): records in, dropped, waiting,
// the most waiting at once and the capacity.
//
// LogSummaries() prints each comm once: the ones no longer live when
// `include_live` is false (the last comm was just destroyed), every
// remaining one at exit. It prints the trace buffer's line every time it is
// called while a trace is on, so a job that destroys all its comms now and
// then (bench/soak) reads how the buffer fares while it runs:
//   summary: trace buffer: 9120 records in, 0 dropped (buffer full), 3 waiting, at most 412 of 2048 waiting at once
//
// Thread safety: thread-safe (iterates the registry under its lock).
#ifndef TRIRACE_INTERPOSE_TRACE_SUMMARY_H_
#define TRIRACE_INTERPOSE_TRACE_SUMMARY_H_

#include <string>

#include "interpose/comm/comm_registry.h"
#include "interpose/trace/trace_buffer.h"

namespace trirace::interpose {

// One comm's summary line (without the log prefix).
std::string CommSummary(const CommState& state);

// The trace buffer's line (without "summary: "); "" when no buffer is alive.
std::string TraceBufferSummary(const TraceBufferTotals& totals);

void LogSummaries(const CommRegistry& registry, bool include_live);

// "12 B", "3.0 KiB", "1.5 MiB", ...
std::string HumanBytes(uint64_t bytes);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_TRACE_SUMMARY_H_
