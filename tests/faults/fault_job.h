// Test helper for the fault matrix: one job of the hybrid example on a test
// bed (tools/testbed/testbed.sh), started in the background so that a test
// can break something while it runs, then judged.
//
//   FaultJob job(tb, {.policy = "trirace"});
//   ASSERT_TRUE(job.Start());
//   ASSERT_TRUE(job.WaitForRanks());
//   std::this_thread::sleep_for(2s);             // mid-run
//   ASSERT_TRUE(job.AllRanksRun());
//   job.MarkFault();
//   Shell("ip -n " + ... + " link set p1 down");
//   JobEnd end = job.Finish();                   // exit code, seconds since the fault
//
// Every rank runs the example under the shim in schedule mode over hostccl
// and the net plugin; TRIRACE_NET_TIMEOUT_MS is kNetTimeoutMs, so the
// bound within which a lost peer must be an error is short.
#ifndef TRIRACE_TESTS_FAULTS_FAULT_JOB_H_
#define TRIRACE_TESTS_FAULTS_FAULT_JOB_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/subprocess.h"
#include "testbed/testbed_fixture.h"

namespace trirace::faults {

inline constexpr int kNetTimeoutMs = 3000;

struct JobOptions {
  std::string policy = "trirace";
  int ranks_per_host = 2;
  int iterations = 200;  // about 5 s of training on 2 cores
  // A failed rank does not stop the others (testbed.sh --keep-going), so
  // every survivor shows how it ends on its own.
  bool keep_going = true;
  // Extra environment for every rank (K=V).
  std::vector<std::string> env;
};

// How one rank ended (testbed.sh's ranks.tsv).
struct RankEnd {
  int exit_code = -1;                // -1: killed by the launcher (at its --timeout)
  double seconds_after_fault = -1;   // when it ended, from MarkFault()
};

struct JobEnd {
  std::vector<RankEnd> ranks;
  int exit_code = -1;        // testbed.sh run's: 0 every rank passed, 124 its timeout
  bool timed_out = false;    // killed by this helper's deadline
  double seconds_after_fault = -1;  // from MarkFault() to the last rank's end
  std::string checksum;      // rank 0's RESULT checksum ("" if none)
  std::string expected;      // the checksum the model must give
  std::string script_err;    // testbed.sh's stderr
  std::vector<std::string> rank_out, rank_err;
  // Once every rank ended: /dev/shm entries of the job's test bed (the
  // occupancy segments), and hostccl rings made since the job started.
  std::vector<std::string> left_in_shm;
  std::string Describe() const;  // for failure messages
};

class FaultJob {
 public:
  FaultJob(const testbed::Testbed& tb, JobOptions options);
  ~FaultJob();
  FaultJob(const FaultJob&) = delete;
  FaultJob& operator=(const FaultJob&) = delete;

  // Starts testbed.sh run; false (with a gtest failure) if it cannot.
  bool Start();
  // Waits until every rank process exists; false (with a gtest failure) if
  // the job ended first.
  bool WaitForRanks();
  // Whether every rank process still runs (with a gtest failure if not:
  // the fault would not hit a running job).
  bool AllRanksRun();
  // The moment the fault is applied; Finish() measures from here.
  void MarkFault();
  // Waits for the end (at most timeout_ms) and collects what it said.
  JobEnd Finish(int timeout_ms = 150000);

  // pids of the example's processes in host `host`, by local rank.
  std::vector<pid_t> RankPids(int host) const;
  const testbed::Testbed& testbed() const { return tb_; }

 private:
  int RanksRunning() const;

  const testbed::Testbed tb_;
  const JobOptions options_;
  std::string out_dir_;
  std::vector<std::string> shm_before_;
  std::unique_ptr<testing_support::ChildGroup> group_;
  int index_ = -1;
  std::chrono::steady_clock::time_point fault_at_{};
  std::chrono::system_clock::time_point fault_wall_{};
  bool faulted_ = false;
};

// Runs `command` with /bin/sh; its exit code (a gtest failure if not 0 and
// `must_succeed`).
int Shell(const std::string& command, bool must_succeed = true);
// Network namespace names of the test bed's fabric and of host `i`.
std::string FabricNs(const testbed::Testbed& tb);
std::string HostNs(const testbed::Testbed& tb, int i);
// /dev/shm entries whose name contains `text`.
std::vector<std::string> ShmEntries(const std::string& text);

}  // namespace trirace::faults

#endif  // TRIRACE_TESTS_FAULTS_FAULT_JOB_H_
