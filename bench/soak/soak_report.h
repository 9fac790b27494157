// The soak's table and verdicts.
//
// One table per rank: a row per sample (the start, then the end of each
// wave) with ops done, comms created, comms alive, RSS, open fds, threads,
// the job's shared-memory objects in /dev/shm, the /dev/shm files the rank
// maps, and the shim's trace buffer (records in, dropped, most waiting at
// once / capacity).
//
// Then one verdict per column, judged after the warm-up (the samples at
// ops >= warmup x ops): a column is bounded when its largest value there
// exceeds its value at the first of them by no more than the column's
// limit (Options: RSS MiB, fds, threads, shared memory), on every rank.
// The trace buffer is bounded when it never held more than its capacity,
// and its drops are counted when every wave's sample has the shim's
// summary and, at exit, the records and drops in its last summary equal
// those in the trace file's metadata and add up to at least the records
// the rank's calls caused (Result::trace_caused): every record was written
// or counted as dropped, none lost silently. After a clean exit the job's
// occupancy segment must be gone from /dev/shm. The run passes when every
// column is bounded, every rank did all its ops with no failed call, no
// wrong value and no annotation error, and no rank failed or hung.
#ifndef TRIRACE_BENCH_SOAK_SOAK_REPORT_H_
#define TRIRACE_BENCH_SOAK_SOAK_REPORT_H_

#include <cstdio>

#include "soak_launcher.h"
#include "soak_options.h"

namespace trirace::soak {

// Prints the tables, the verdicts and a last line "soak: PASS" or
// "soak: FAIL: ..." to `out`; true when the run passes.
bool Report(const Options& o, const Run& run, FILE* out);

}  // namespace trirace::soak

#endif  // TRIRACE_BENCH_SOAK_SOAK_REPORT_H_
