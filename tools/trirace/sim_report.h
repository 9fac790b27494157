// What `trirace sim` prints: the per-mode table, or one JSON object
// (`--json`), for a workload's comparison or a single collective.
#ifndef TRIRACE_TOOLS_TRIRACE_SIM_REPORT_H_
#define TRIRACE_TOOLS_TRIRACE_SIM_REPORT_H_

#include <string>

#include "sim/cluster/cluster.h"
#include "sim/program/program.h"
#include "sim/run/compare.h"
#include "sim/workloads/replay.h"

namespace trirace::tools {

struct SimReportOptions {
  bool json = false;
  bool timing = false;  // the simulator's own wall time and events (not deterministic)
  double peak_rss_mib = 0;  // with timing: the process's peak resident memory
};

// "testbed: 4 hosts x 2 ranks, 1 x 0.3 Gbit/s, single_switch fabric, sockets, class queues: fabric".
std::string ClusterLine(const sim::Cluster& c);

// "nic-rx:h0/up0 78%, nic-tx:h1/up0 78%": a run's busiest links and their use.
std::string BusiestLinksText(const sim::ModeResult& r);

// How a replay was built (by dependencies, with its counts, or by call
// times), one line for stderr: "<command>: replay by ...".
std::string ReplayLine(const char* command, const sim::ReplayStats& s);

std::string SimWorkloadReport(const sim::Cluster& cluster, const sim::Workload& workload, const sim::Comparison& c,
                              const SimReportOptions& o);
std::string SimCollectiveReport(const sim::Cluster& cluster, const sim::Workload& workload,
                                const sim::ModeResult& r, NcclFunc func, uint64_t bytes, int ranks,
                                const SimReportOptions& o);

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_SIM_REPORT_H_
