// What `trirace sim` prints: the per-mode table, or one JSON object
// (`--json`), for a workload's comparison or a single collective.
#ifndef TRIRACE_TOOLS_TRIRACE_SIM_REPORT_H_
#define TRIRACE_TOOLS_TRIRACE_SIM_REPORT_H_

#include <string>

#include "sim/cluster/cluster.h"
#include "sim/program/program.h"
#include "sim/run/compare.h"

namespace trirace::tools {

struct SimReportOptions {
  bool json = false;
  bool timing = false;  // the simulator's own wall time and events (not deterministic)
  double peak_rss_mib = 0;  // with timing: the process's peak resident memory
};

std::string SimWorkloadReport(const sim::Cluster& cluster, const sim::Workload& workload, const sim::Comparison& c,
                              const SimReportOptions& o);
std::string SimCollectiveReport(const sim::Cluster& cluster, const sim::Workload& workload,
                                const sim::ModeResult& r, NcclFunc func, uint64_t bytes, int ranks,
                                const SimReportOptions& o);

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_SIM_REPORT_H_
