// Shared pieces of the occupancy segment (include/trirace/occupancy.h) used
// by both the publisher in the plugin and the reader library: the segment
// name, the default job id, process liveness and the sequence lock.
//
// Thread safety: all functions are thread-safe.
#ifndef TRIRACE_PLUGIN_OCCUPANCY_SEGMENT_H_
#define TRIRACE_PLUGIN_OCCUPANCY_SEGMENT_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "trirace/occupancy.h"

namespace trirace::occupancy {

// TRIRACE_JOB_ID, else the launcher's job id (SLURM_JOB_ID,
// TORCHELASTIC_RUN_ID, PMIX_NAMESPACE, LSB_JOBID, PBS_JOBID, FLUX_JOB_ID),
// else "default"; sanitised to [A-Za-z0-9._-], at most 48 characters.
std::string DefaultJobId();
std::string SanitizeJobId(absl::string_view job);
// "/trirace-<uid>-<job>"; an empty `job` means DefaultJobId().
std::string SegmentName(absl::string_view job);

// starttime (field 22 of /proc/<pid>/stat), 0 if unreadable.
uint64_t ProcessStartTime(pid_t pid);
// True if `pid` runs (not a zombie) and, when start_time != 0, is the
// same process (not a reused pid).
bool ProcessAlive(pid_t pid, uint64_t start_time);

// CLOCK_MONOTONIC in nanoseconds (the timestamps in the segment).
uint64_t NowNs();

template <typename T>
inline std::atomic_ref<T> Atomic(T& field) {
  return std::atomic_ref<T>(field);
}

// Copies slot `src` into `out` under its sequence lock; false if the slot
// stayed busy (being written) for 20 ms.
bool ReadSlot(trirace_occ_proc_t& src, trirace_occ_proc_t* out);

// Checks that a mapped header matches this build's layout.
bool HeaderMatches(const trirace_occ_header_t& header);

}  // namespace trirace::occupancy

#endif  // TRIRACE_PLUGIN_OCCUPANCY_SEGMENT_H_
