// What a soak rank measures about its own process, and what it reads back
// from the shim.
//
// Process: VmRSS and Threads (/proc/self/status), open fds (/proc/self/fd),
// and the /dev/shm files it maps (/proc/self/maps; hostccl unlinks its rings
// once both sides opened them, so a leaked ring shows here and not in
// /dev/shm).
//
// Shared-memory names of the job in /dev/shm (ShmNames): the net plugin's
// occupancy segment "trirace-<euid>-<job>" (plugin/occupancy/segment.cc,
// job = TRIRACE_JOB_ID, which the launcher makes unique per run) and
// hostccl's rings "trirace-hostccl-u<uid>-<hash>-<src>-<dst>"
// (hostccl/src/shm_ring.cc), hash = the FNV-1a 64 of the comm's
// ncclUniqueId (hostccl's UniqueIdHash), so only this job's rings count
// even when other jobs run on the machine.
//
// The trace buffer (TraceSummaryReader): the shim logs
//   summary: trace buffer: N records in, D dropped (buffer full), W waiting, at most H of C waiting at once
// at INFO (subsystem INTERPOSE) whenever the last comm is destroyed and at
// exit (interpose/trace/summary.h); the launcher points TRIRACE_DEBUG_FILE at a
// file per rank and the reader takes the newest such line.
//
// Thread safety: none; one thread per rank uses these.
#ifndef TRIRACE_BENCH_SOAK_SOAK_PROBE_H_
#define TRIRACE_BENCH_SOAK_SOAK_PROBE_H_

#include <cstdint>
#include <set>
#include <string>

#include "nccl.h"

namespace trirace::soak {

int64_t RssKb();
int64_t ThreadCount();
int64_t OpenFds();
int64_t MappedShmFiles();

class ShmNames {
 public:
  explicit ShmNames(const std::string& job);
  // A comm of this job: its rings count from now on.
  void AddComm(const ncclUniqueId& id);
  // Names in /dev/shm that belong to this job.
  int64_t Count() const;

 private:
  std::string segment_;      // the occupancy segment's name
  std::string ring_prefix_;  // "trirace-hostccl-u<uid>-"
  std::set<std::string> hashes_;  // 16 hex digits each
};

// /dev/shm path of the job's occupancy segment.
std::string OccupancySegmentPath(const std::string& job);

struct TraceSummary {
  bool found = false;
  int64_t records = 0, dropped = 0, waiting = 0, high = 0, capacity = 0;
};

// Parses one summary line (false if `line` is not one).
bool ParseTraceSummary(const std::string& line, TraceSummary* out);

class TraceSummaryReader {
 public:
  explicit TraceSummaryReader(std::string log_path) : path_(std::move(log_path)) {}
  // The newest trace-buffer line written since the last call (found = false if none).
  TraceSummary Next();
  // The newest one in the whole file.
  static TraceSummary Last(const std::string& log_path);

 private:
  std::string path_;
  uint64_t offset_ = 0;
};

// "records" and "dropped_events" of a finished trace file's metadata
// (interpose/trace/trace_writer.h writes them at exit); false if the file has no
// footer.
bool TraceFileCounts(const std::string& path, int64_t* records, int64_t* dropped);

}  // namespace trirace::soak

#endif  // TRIRACE_BENCH_SOAK_SOAK_PROBE_H_
