// The engine's occupancy input: an OccupancyReader sampled every period
// while tasks are held, its counters turned into rates, and each rate
// mapped to the link its device measures.
//
// A failed read loses that sample only: kUnavailable (a transient miss) is
// logged at TRACE, any other error warns once until the reader recovers.
//
// Thread safety: none; the engine serialises Sample() with its step lock
// and the scheduling fields with its state lock.
#ifndef TRIRACE_SCHEDULER_OCCUPANCY_SAMPLER_H_
#define TRIRACE_SCHEDULER_OCCUPANCY_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/occupancy_reader.h"
#include "scheduler/task.h"

namespace trirace::sched {

// One link's rate from one sample.
struct LinkRate {
  LinkId link = 0;
  double bytes_per_s = 0;
  double ours_bytes_per_s = -1;  // -1: the source does not know
};

class OccupancySampler {
 public:
  // Replaces the reader (nullptr: no input) and the device -> link map;
  // the next sample is due at once.
  void SetReader(std::unique_ptr<OccupancyReader> reader,
                 std::vector<std::pair<std::string, LinkId>> device_links);
  bool has_reader() const { return reader_ != nullptr; }

  // Whether a sample is due at `now`, and when the next one is.
  bool Due(int64_t now) const { return reader_ != nullptr && now >= next_sample_ns_; }
  int64_t next_sample_ns() const { return next_sample_ns_; }
  // Reads the counters and returns the rates since the previous read, per
  // link (empty on the first read or a failed one).
  std::vector<LinkRate> Sample();
  // The sample taken at `now` was applied; the next is due a period later.
  void Taken(int64_t now, int64_t period_ns) { next_sample_ns_ = now + period_ns; }

 private:
  std::unique_ptr<OccupancyReader> reader_;
  std::vector<std::pair<std::string, LinkId>> device_links_;
  RateMeter meter_;
  bool warned_ = false;
  int64_t next_sample_ns_ = 0;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_OCCUPANCY_SAMPLER_H_
