// Occupancy from the TriRace net plugin's per-host shared-memory segment
// (include/trirace/occupancy.h).
//
// Per NIC the segment gives the bytes the job's processes on this host
// completed (send and receive), summed over live processes, and each
// process's own share; this reader reports both, so the engine computes
// foreign = all - ours exactly (other local ranks' traffic counts as
// foreign: this process's engine cannot hold it), and per NIC the P2P and
// SPARSE send bytes the other processes have in flight (the trirace
// policy's cross-process higher-class activity). It does not see traffic
// that bypasses the plugin (other jobs, non-NCCL); use sysfs for that.
//
// Each Read() copies the slot of every live process once (a few KiB each,
// under its sequence lock), so totals and this process's share are
// consistent with each other.
//
// Lives in interpose/, where params, readers and the engine are wired
// together, so that scheduler/ does not link the plugin's reader library.
//
// Thread safety: one thread at a time.
#ifndef TRIRACE_INTERPOSE_NETWORK_PLUGIN_OCCUPANCY_H_
#define TRIRACE_INTERPOSE_NETWORK_PLUGIN_OCCUPANCY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/link_counters.h"

namespace trirace::interpose {

// Opens the segment of `job` ("" = the default job, as occupancy.h says).
// NotFound when no segment exists yet (no plugin published on this host),
// FailedPrecondition for another layout version, PermissionDenied for
// another user's segment, Unavailable for anything else.
absl::StatusOr<std::unique_ptr<OccupancyReader>> OpenPluginOccupancyReader(
    const std::string& job = "", const Clock* clock = &RealClock::Get());

// For a failed OpenPluginOccupancyReader: whether a later try may succeed
// (NotFound: not published yet; Unavailable: a transient failure), so that
// waiting for the segment makes sense.
bool SegmentMayOpenLater(const absl::Status& open_error);

// For a segment that does not exist yet: the engine starts with the shim,
// before NCCL has loaded the plugin (at the first communicator), so the
// segment usually appears after it. This reader tries to open the segment
// on Read, at most every `retry_ns`, and reads `fallback` until it opens
// (nullptr: Unavailable, a skipped sample); from then on only the
// segment. One INFO line when it switches. The segment's devices carry
// DeviceCounters::series 1, so rates restart at the switch
// (scheduler/occupancy_reader.h RateMeter). Without a fallback, one WARN
// when no segment appeared within 10 s. A segment that exists but cannot
// be opened (another layout version, another owner) WARNs once and is not
// retried; other errors (out of descriptors) are retried.
std::unique_ptr<OccupancyReader> PluginOccupancyReaderOnceItOpens(std::unique_ptr<OccupancyReader> fallback,
                                                                  const std::string& job = "",
                                                                  const Clock* clock = &RealClock::Get(),
                                                                  int64_t retry_ns = 50'000'000);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_NETWORK_PLUGIN_OCCUPANCY_H_
