// The engine's occupancy input: an OccupancyReader whose counters are
// turned into rates, each mapped to the link its device measures. When to
// sample (every period while tasks are held) is the engine's decision.
//
// A failed read loses that sample only: kUnavailable (a transient miss) is
// logged at TRACE, any other error warns once until the reader recovers.
//
// Thread safety: none; the engine holds its step lock around every call.
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
  int64_t others_urgent_bytes = -1;  // DeviceRate::others_urgent_bytes
};

class OccupancySampler {
 public:
  // Replaces the reader (nullptr: no input) and the device -> link map.
  void SetReader(std::unique_ptr<OccupancyReader> reader,
                 std::vector<std::pair<std::string, LinkId>> device_links);
  bool has_reader() const { return reader_ != nullptr; }

  // Reads the counters and returns the rates since the previous read, per
  // link (empty without a reader, on the first read or a failed one).
  std::vector<LinkRate> Sample();

 private:
  std::unique_ptr<OccupancyReader> reader_;
  std::vector<std::pair<std::string, LinkId>> device_links_;
  RateMeter meter_;
  bool warned_ = false;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_OCCUPANCY_SAMPLER_H_
