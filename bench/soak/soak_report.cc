#include "soak_report.h"

#include <algorithm>
#include <cinttypes>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "soak_probe.h"

namespace trirace::soak {
namespace {

struct Column {
  const char* name;
  std::function<double(const Sample&)> value;
  double limit;
  const char* format;  // printf format of one value
};

double Mib(const Sample& s) { return static_cast<double>(s.rss_kb) / 1024.0; }

void PrintTable(const RankRun& rr, int rank, FILE* out) {
  std::fprintf(out, "\nrank %d\n", rank);
  std::fprintf(out, "%9s %6s %6s %8s %5s %8s %12s %9s %14s %12s %11s\n", "ops", "comms", "alive", "RSS MiB", "fds",
               "threads", "shm objects", "shm maps", "trace records", "trace drops", "trace held");
  for (const Sample& s : rr.samples) {
    std::fprintf(out, "%9" PRId64 " %6" PRId64 " %6" PRId64 " %8.1f %5" PRId64 " %8" PRId64 " %12" PRId64
                      " %9" PRId64,
                 s.ops, s.comms_created, s.comms_alive, Mib(s), s.fds, s.threads, s.shm_objects, s.shm_maps);
    if (s.trace_capacity > 0) {
      const std::string held = std::to_string(s.trace_high) + "/" + std::to_string(s.trace_capacity);
      std::fprintf(out, " %14" PRId64 " %12" PRId64 " %11s\n", s.trace_records, s.trace_dropped, held.c_str());
    } else {
      std::fprintf(out, " %14s %12s %11s\n", "-", "-", "-");
    }
  }
}

}  // namespace

bool Report(const Options& o, const Run& run, FILE* out) {
  std::vector<std::string> failures;
  if (!run.failure.empty()) failures.push_back(run.failure);
  std::fprintf(out, "soak: %d ranks, %" PRId64 " ops over %d comms (a new one every %" PRId64
                    " ops, at most %d alive, all destroyed every %" PRId64 " ops), schedule mode, trirace policy, "
                    "trace buffer %d MiB; %.1f s\n",
               o.nranks, o.ops, o.comms, o.ops_per_comm(), o.alive, o.ops_per_wave(), o.trace_buffer_mb, run.seconds);
  for (size_t r = 0; r < run.ranks.size(); ++r) PrintTable(run.ranks[r], static_cast<int>(r), out);

  const int64_t warm = static_cast<int64_t>(o.warmup * static_cast<double>(o.ops));
  const std::vector<Column> columns = {
      {"RSS MiB", Mib, o.rss_limit_mib, "%.1f"},
      {"fds", [](const Sample& s) { return static_cast<double>(s.fds); }, static_cast<double>(o.fd_limit), "%.0f"},
      {"threads", [](const Sample& s) { return static_cast<double>(s.threads); }, static_cast<double>(o.thread_limit),
       "%.0f"},
      {"shm objects", [](const Sample& s) { return static_cast<double>(s.shm_objects); },
       static_cast<double>(o.shm_limit), "%.0f"},
      {"shm maps", [](const Sample& s) { return static_cast<double>(s.shm_maps); }, static_cast<double>(o.shm_limit),
       "%.0f"},
  };
  std::fprintf(out, "\nverdicts on the samples from op %" PRId64 " on (after the warm-up), worst rank; growth = the "
                    "largest value there minus the first:\n", warm);
  for (const Column& c : columns) {
    double worst = -1e300, first = 0, last = 0, max = 0;
    int worst_rank = 0, judged = 0;
    for (size_t r = 0; r < run.ranks.size(); ++r) {
      const std::vector<Sample>& samples = run.ranks[r].samples;
      std::vector<double> window;
      for (const Sample& s : samples) {
        if (s.ops >= warm) window.push_back(c.value(s));
      }
      if (window.size() < 2) continue;
      ++judged;
      const double growth = *std::max_element(window.begin(), window.end()) - window.front();
      if (growth > worst) {
        worst = growth;
        worst_rank = static_cast<int>(r);
        first = c.value(samples.front());
        last = c.value(samples.back());
        max = first;
        for (const Sample& s : samples) max = std::max(max, c.value(s));
      }
    }
    if (judged < static_cast<int>(run.ranks.size())) {
      std::fprintf(out, "  %-12s not judged: fewer than 2 samples after the warm-up\n", c.name);
      failures.push_back(std::string(c.name) + " not judged");
      continue;
    }
    const bool ok = worst <= c.limit + 1e-9;
    const std::string fmt = std::string("  %-12s %-9s +") + c.format + " (rank %d; limit +" + c.format +
                            "); over the run " + c.format + " -> " + c.format + ", max " + c.format + "\n";
    std::fprintf(out, fmt.c_str(), c.name, ok ? "bounded" : "UNBOUNDED", worst, worst_rank, c.limit, first, last, max);
    if (!ok) failures.push_back(std::string(c.name) + " grew without bound");
  }

  // The trace buffer: never above its capacity, a summary in every wave;
  // at exit the last summary and the trace file's metadata agree, and every
  // record the rank caused is in the file or counted as dropped.
  int64_t high = 0, capacity = 0, records = 0, dropped = 0, caused = 0;
  bool summaries = true, counted = true, held = true;
  std::string mismatch;
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const RankRun& rr = run.ranks[r];
    for (const Sample& s : rr.samples) {
      if (s.ops > 0 && s.trace_capacity == 0) summaries = false;
      high = std::max(high, s.trace_high);
      capacity = std::max(capacity, s.trace_capacity);
      if (s.trace_capacity > 0 && s.trace_high > s.trace_capacity) held = false;
    }
    const TraceSummary last = TraceSummaryReader::Last(rr.log_path);
    int64_t file_records = -1, file_dropped = -1;
    const bool footer = TraceFileCounts(rr.trace_path, &file_records, &file_dropped);
    // More than caused is fine (the scheduler's own records); fewer is a silent loss.
    if (!last.found || !footer || last.records != file_records || last.dropped != file_dropped ||
        last.records + last.dropped < rr.result.trace_caused) {
      counted = false;
      mismatch += "; rank " + std::to_string(r) + ": caused " + std::to_string(rr.result.trace_caused) +
                  ", summary " +
                  (last.found ? std::to_string(last.records) + " in + " + std::to_string(last.dropped) + " dropped"
                              : std::string("missing")) +
                  ", trace file " +
                  (footer ? std::to_string(file_records) + " + " + std::to_string(file_dropped) : std::string("no footer"));
    }
    records += last.records;
    dropped += last.dropped;
    caused += rr.result.trace_caused;
  }
  if (run.failure.empty()) {
    std::fprintf(out, "  %-12s %-9s at most %" PRId64 " of %" PRId64 " records waiting at once\n", "trace held",
                 held && capacity > 0 ? "bounded" : "UNBOUNDED", high, capacity);
    if (!held || capacity == 0) failures.push_back("the trace buffer held more than its capacity, or no summary said");
    if (!summaries) failures.push_back("a wave ended without the shim's trace-buffer summary");
    std::fprintf(out, "  %-12s %-9s %" PRId64 " dropped (buffer full), %" PRId64 " written, of %" PRId64
                      " records the ranks caused%s\n", "trace drops", counted ? "counted" : "UNCOUNTED", dropped, records,
                 caused, counted ? "; the trace files' metadata say the same" : mismatch.c_str());
    if (!counted) failures.push_back("trace records lost without being counted, or counted differently");
  }

  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const RankRun& rr = run.ranks[r];
    if (!rr.has_result) {
      if (run.failure.empty()) failures.push_back("rank " + std::to_string(r) + " printed no result");
      continue;
    }
    const Result& res = rr.result;
    std::fprintf(out, "  results      rank %zu: %" PRId64 " ops, %" PRId64 " values checked, %" PRId64 " wrong, %" PRId64
                      " failed calls, %" PRId64 " annotation errors%s%s\n",
                 r, res.ops, res.values_checked, res.wrong_values, res.failed_calls, res.annotation_errors,
                 res.first_problem.empty() ? "" : "; first: ", res.first_problem.c_str());
    if (res.ops != o.ops || res.wrong_values != 0 || res.failed_calls != 0 || res.annotation_errors != 0) {
      failures.push_back("rank " + std::to_string(r) + " results are wrong or incomplete");
    }
  }
  // The job id is the run's own, so its occupancy segment must be gone once
  // every rank exited cleanly (a killed rank leaves it; main removes it).
  const std::string segment = OccupancySegmentPath(o.job);
  if (std::ifstream(segment).good()) {
    std::fprintf(out, "  after exit   %s is left behind\n", segment.c_str());
    if (run.failure.empty()) failures.push_back(segment + " left behind after a clean exit");
  } else {
    std::fprintf(out, "  after exit   the job's occupancy segment is gone\n");
  }

  // Warnings are shown, not judged: the checks above say what went wrong.
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    std::ifstream log(run.ranks[r].log_path);
    int64_t warnings = 0;
    std::string first;
    for (std::string line; std::getline(log, line);) {
      if (line.find(" TriRace WARN ") == std::string::npos) continue;
      if (warnings++ == 0) first = line;
    }
    std::fprintf(out, "  warnings     rank %zu: %" PRId64 " in its log%s%s\n", r, warnings, first.empty() ? "" : "; first: ",
                 first.c_str());
  }
  if (failures.empty()) {
    std::fprintf(out, "soak: PASS\n");
    return true;
  }
  std::string all;
  for (const std::string& f : failures) all += (all.empty() ? "" : "; ") + f;
  std::fprintf(out, "soak: FAIL: %s\n", all.c_str());
  return false;
}

}  // namespace trirace::soak
