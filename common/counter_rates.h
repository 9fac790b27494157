// Rates from cumulative counters: two readings of the same monotone counters
// one interval apart give per-second rates. The one rate computation of the
// project: the scheduler's occupancy sampler (scheduler/occupancy_reader.h
// RateMeter) and `trirace net-top` both measure through it, so they agree
// on what a reset or a stalled clock means.
//
//   CounterRates rates;
//   rates.Update("eth0", t0, {tx0, rx0});              // first reading: {}
//   std::vector<double> r = rates.Update("eth0", t1, {tx1, rx1});
//   // r[0] = (tx1 - tx0) / (t1 - t0 in s), r[1] likewise
//
// A key's readings form one series. No rate comes back (an empty vector) on
// a key's first reading, when the clock did not advance, when the number of
// counters changed, or when any counter went backwards (a device reset, a
// recycled slot): the interval cannot be measured, and the series restarts
// from the new reading.
//
// Thread safety: none; one owner at a time.
#ifndef TRIRACE_COMMON_COUNTER_RATES_H_
#define TRIRACE_COMMON_COUNTER_RATES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace trirace {

class CounterRates {
 public:
  // Records the counters of `key` read at `time_ns` (any monotonic clock,
  // the same for every call) and returns their per-second rates since the
  // key's previous reading, in the order given, or {} (see above).
  std::vector<double> Update(absl::string_view key, int64_t time_ns, absl::Span<const uint64_t> counters);

  // Forgets every series.
  void Clear() { last_.clear(); }

 private:
  struct Reading {
    int64_t time_ns = 0;
    std::vector<uint64_t> counters;
  };
  absl::flat_hash_map<std::string, Reading> last_;
};

}  // namespace trirace

#endif  // TRIRACE_COMMON_COUNTER_RATES_H_
