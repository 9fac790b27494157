#include "interpose/trace/summary.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"
#include "interpose/annotations.h"
#include "interpose/trace/trace_buffer.h"

namespace trirace::interpose {

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, kUnits[u]);
}

std::string CommSummary(const CommState& s) {
  bool annotated = false;
  const int role = EffectiveRole(s, &annotated);
  uint64_t total_ops = 0, total_bytes = 0;
  std::string by_func, by_class;
  for (int f = 0; f < kNumNcclFuncs; ++f) {
    const uint64_t n = s.stats.ops[f].load(std::memory_order_relaxed);
    if (n == 0) continue;
    const uint64_t b = s.stats.bytes[f].load(std::memory_order_relaxed);
    total_ops += n;
    total_bytes += b;
    absl::StrAppend(&by_func, by_func.empty() ? "" : ", ", NcclFuncName(static_cast<NcclFunc>(f)), " ", n, " (",
                    HumanBytes(b), ")");
  }
  for (int c = 0; c < kNumTrafficClasses; ++c) {
    const uint64_t n = s.stats.class_ops[c].load(std::memory_order_relaxed);
    if (n == 0) continue;
    absl::StrAppend(&by_class, by_class.empty() ? "" : ", ", TrafficClassName(static_cast<TrafficClass>(c)), " ",
                    n, " (", HumanBytes(s.stats.class_bytes[c].load(std::memory_order_relaxed)), ")");
  }
  const double in_flight_ms = static_cast<double>(s.stats.in_flight_ns.load(std::memory_order_relaxed)) / 1e6;
  return absl::StrFormat("comm %d id %s rank %d/%d role %s (%s): %d ops, %s; by func: %s; by class: %s; "
                         "in flight %.3f ms",
                         s.index, CommIdHex(s.id), s.rank, s.nranks, RoleName(role),
                         annotated ? "annotated" : "inferred", total_ops, HumanBytes(total_bytes),
                         by_func.empty() ? "none" : by_func, by_class.empty() ? "none" : by_class, in_flight_ms);
}

std::string TraceBufferSummary(const TraceBufferTotals& t) {
  if (t.buffers == 0) return "";
  return absl::StrFormat("trace buffer: %d records in, %d dropped (buffer full), %d waiting, at most %d of %d "
                         "waiting at once", t.pushed, t.dropped, t.waiting, t.high_water, t.capacity);
}

void LogSummaries(const CommRegistry& registry, bool include_live) {
  registry.ForEach([&](CommState& s) {
    if (!include_live && s.live.load(std::memory_order_relaxed)) return;
    if (s.summarized.exchange(true)) return;
    TRIRACE_INFO(INTERPOSE, "summary: %s", CommSummary(s));
  });
  const std::string trace = TraceBufferSummary(ProcessTraceBufferTotals());
  if (!trace.empty()) TRIRACE_INFO(INTERPOSE, "summary: %s", trace);
  if (include_live) {
    const AnnotationCounters c = GetAnnotationCounters();
    if (c.unbalanced_pops + c.unbalanced_iteration_ends + c.overflowed_pushes > 0) {
      TRIRACE_INFO(INTERPOSE, "summary: annotation misuse: %d unbalanced pops, %d unbalanced iteration ends, %d "
                   "pushes beyond the depth limit", c.unbalanced_pops, c.unbalanced_iteration_ends,
                   c.overflowed_pushes);
    }
  }
}

}  // namespace trirace::interpose
