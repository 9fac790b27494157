#include "common/counter_rates.h"

#include <cstddef>

namespace trirace {

std::vector<double> CounterRates::Update(absl::string_view key, int64_t time_ns,
                                         absl::Span<const uint64_t> counters) {
  std::vector<double> rates;
  auto [it, first] = last_.try_emplace(key);
  Reading& last = it->second;
  if (!first && time_ns > last.time_ns && last.counters.size() == counters.size()) {
    const double seconds = static_cast<double>(time_ns - last.time_ns) * 1e-9;
    rates.reserve(counters.size());
    for (size_t i = 0; i < counters.size(); ++i) {
      if (counters[i] < last.counters[i]) {  // went backwards: restart
        rates.clear();
        break;
      }
      rates.push_back(static_cast<double>(counters[i] - last.counters[i]) / seconds);
    }
  }
  last.time_ns = time_ns;
  last.counters.assign(counters.begin(), counters.end());
  return rates;
}

}  // namespace trirace
