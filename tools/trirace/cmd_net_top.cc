// trirace net-top: a live view of the host's occupancy segment (what the
// TriRace net plugin publishes, include/trirace/occupancy.h): per NIC the
// send/receive throughput, bytes and requests in flight, and each traffic
// class's share of the bytes moved in the last interval.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "commands.h"
#include "common/counter_rates.h"
#include "trirace/occupancy.h"

namespace trirace::tools {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

std::string Bytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrFormat("%.0f %s", v, units[u]) : absl::StrFormat("%.1f %s", v, units[u]);
}

// The counters of one NIC, in the order PrintTable reads their rates: the
// total sent and received, then each class's sent and received.
std::vector<uint64_t> NicCounters(const trirace_occ_nic_summary_t& n) {
  std::vector<uint64_t> c = {n.total.send_completed_bytes, n.total.recv_completed_bytes};
  for (int k = 0; k < TRIRACE_OCC_NUM_CLASSES; ++k) {
    c.push_back(n.cls[k].send_completed_bytes);
    c.push_back(n.cls[k].recv_completed_bytes);
  }
  return c;
}

// One table for `now`; `rates` holds the previous sample of each NIC. A NIC
// without a rate (new, or its counters reset) shows "-".
void PrintTable(const std::string& segment, const trirace_occ_snapshot_t& now, double interval_s,
                CounterRates& rates) {
  std::printf("occupancy %s: %u process(es), interval %.2f s\n", segment.c_str(), now.num_procs, interval_s);
  std::printf("%-12s %9s %12s %12s %7s %12s %12s %9s  %s\n", "NIC", "Mbps", "send/s", "recv/s", "util",
              "inflight tx", "inflight rx", "reqs", "share P2P/SPARSE/DENSE/other");
  for (uint32_t i = 0; i < now.num_nics; ++i) {
    const trirace_occ_nic_summary_t& n = now.nics[i];
    const std::vector<double> r = rates.Update(n.name, now.time_ns, NicCounters(n));
    std::string tx = "-", rx = "-", util = "-", share = "-";
    if (!r.empty()) {
      tx = Bytes(r[0]);
      rx = Bytes(r[1]);
      if (n.speed_mbps > 0) util = absl::StrFormat("%.1f%%", 100.0 * std::max(r[0], r[1]) * 8 / (n.speed_mbps * 1e6));
      double moved[TRIRACE_OCC_NUM_CLASSES];
      double all = 0;
      for (int k = 0; k < TRIRACE_OCC_NUM_CLASSES; ++k) all += moved[k] = r[2 + 2 * k] + r[3 + 2 * k];
      if (all > 0) {
        auto pct = [&](int k) { return 100.0 * moved[k] / all; };
        share = absl::StrFormat("%.0f%%/%.0f%%/%.0f%%/%.0f%%", pct(1), pct(2), pct(3), pct(0));
      }
    }
    std::printf("%-12s %9u %12s %12s %7s %12s %12s %9s  %s\n", n.name, n.speed_mbps, tx.c_str(), rx.c_str(),
                util.c_str(), Bytes(n.total.send_inflight_bytes).c_str(), Bytes(n.total.recv_inflight_bytes).c_str(),
                absl::StrFormat("%u/%u", static_cast<unsigned>(n.total.send_inflight_reqs),
                                static_cast<unsigned>(n.total.recv_inflight_reqs)).c_str(),
                share.c_str());
  }
  if (now.num_nics == 0) std::printf("(no NIC published yet)\n");
  std::fflush(stdout);
}

// One snapshot. EAGAIN (a live process kept its slot busy through the
// read's 20 ms wait, e.g. descheduled mid-write) is the library's "try
// again": tried again for up to a second before it is shown.
int Read(trirace_occ_reader_t* r, trirace_occ_snapshot_t* s, const std::string& segment) {
  int rc = trirace_occ_read(r, s);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (rc == EAGAIN && !g_stop.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rc = trirace_occ_read(r, s);
  }
  if (rc != 0) std::fprintf(stderr, "trirace net-top: reading %s: %s\n", segment.c_str(), std::strerror(rc));
  return rc;
}

void Sleep(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_stop.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Shows the segment of `job` until interrupted, or one table with `once`.
int Watch(const std::string& job, bool once, double interval) {
  char name[256];
  if (trirace_occ_segment_name(job.c_str(), name, sizeof(name)) != 0) {
    std::fprintf(stderr, "trirace net-top: --job=%s is too long\n", job.c_str());
    return kExitUsage;
  }
  const std::string segment = name;
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  trirace_occ_reader_t* reader = nullptr;
  int rc = trirace_occ_open_name(name, &reader);
  while (rc == ENOENT && !once && !g_stop.load()) {
    std::printf("\033[H\033[2Jwaiting for %s (no job using the TriRace net plugin yet)\n", name);
    std::fflush(stdout);
    Sleep(interval);
    rc = trirace_occ_open_name(name, &reader);
  }
  if (rc != 0) {
    if (g_stop.load()) return 0;
    std::fprintf(stderr, "trirace net-top: cannot open %s: %s%s\n", name, std::strerror(rc),
                 rc == ENOENT ? " (is a job using the TriRace net plugin on this host? see --job)" : "");
    return 1;
  }
  const bool tty = isatty(STDOUT_FILENO);
  trirace_occ_snapshot_t now;
  CounterRates rates;
  rc = Read(reader, &now, segment);
  for (uint32_t i = 0; rc == 0 && i < now.num_nics; ++i) rates.Update(now.nics[i].name, now.time_ns, NicCounters(now.nics[i]));
  int64_t before_ns = now.time_ns;
  while (rc == 0 && !g_stop.load()) {
    Sleep(interval);
    rc = Read(reader, &now, segment);
    if (rc == EAGAIN && !once) {  // a sample skipped (said above); the next one may do
      rc = 0;
      continue;
    }
    if (rc != 0) break;
    if (tty && !once) std::printf("\033[H\033[2J");
    PrintTable(segment, now, static_cast<double>(now.time_ns - before_ns) / 1e9, rates);
    if (once) break;
    before_ns = now.time_ns;
  }
  trirace_occ_close(reader);
  return rc == 0 ? 0 : 1;
}

}  // namespace

Command AddNetTopCommand(CLI::App& trirace) {
  struct State {
    std::string job;
    bool once = false;
    double interval = 1.0;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd =
      trirace.add_subcommand("net-top", "live per-NIC network occupancy published by the TriRace net plugin");
  cmd->add_option("--job", state->job, "the job whose segment to show")->type_name("ID");
  cmd->add_flag("--once", state->once, "print one table (two samples one interval apart) and exit");
  cmd->add_option_function<std::string>(
         "--interval",
         [state](const std::string& value) {
           if (!absl::SimpleAtod(value, &state->interval) || state->interval < 0.05 || state->interval > 3600) {
             RejectValue("--interval=" + value + ": expected seconds in [0.05, 3600]");
           }
         },
         "seconds between samples, 0.05 to 3600")
      ->type_name("SECONDS")
      ->default_str("1");
  cmd->footer(
      "Shows the network occupancy the TriRace net plugin publishes on this host\n"
      "(shared memory /trirace-<uid>-<job>): per NIC the send and receive throughput over\n"
      "the last interval, utilisation of the link speed, bytes and requests in flight, and\n"
      "the share of P2P / SPARSE / DENSE / unclassified traffic. Refreshes every interval\n"
      "until interrupted. The job defaults to TRIRACE_JOB_ID, else the launcher's job id,\n"
      "else 'default'.");
  return {cmd, [state] { return Watch(state->job, state->once, state->interval); }};
}

}  // namespace trirace::tools
