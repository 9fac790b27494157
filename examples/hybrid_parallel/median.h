// The median the example reports (its own timings and the simulation's):
// the middle value, or the mean of the two middle values; 0 when empty.
#ifndef EXAMPLES_HYBRID_PARALLEL_MEDIAN_H_
#define EXAMPLES_HYBRID_PARALLEL_MEDIAN_H_

#include <algorithm>
#include <vector>

namespace hybrid {

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_MEDIAN_H_
