// Several jobs on one cluster at once (rails-split / rails-shared on the
// test bed; scheduling across jobs later): each job's workload placed on
// chosen ranks of the cluster, through chosen NICs, with its own comms and,
// in the gated modes, its own engines (one per rank, as every process has).
//
//   std::vector<Job> jobs = {{"dp", dp_workload, {0, 2, 4, 6}, {0, 0, 0, 0}},
//                            {"pp", pp_workload, {1, 3, 5, 7}, {1, 1, 1, 1}}};
//   absl::StatusOr<Workload> w = CombineJobs(jobs, &cluster);  // sets cluster.nic_of_rank
//
// The combined workload's ranks are the cluster's; ranks no job uses stay
// idle. The simulator reports each job's iteration times
// (ModeResult::jobs).
//
// Thread safety: pure.
#ifndef TRIRACE_SIM_WORKLOADS_JOBS_H_
#define TRIRACE_SIM_WORKLOADS_JOBS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/cluster/cluster.h"
#include "sim/program/program.h"

namespace trirace::sim {

struct Job {
  std::string name;
  Workload workload;
  std::vector<int> ranks;  // the cluster rank of each of the job's ranks
  std::vector<int> nics;   // the NIC each of them uses (empty: NIC 0)
};

// The jobs as one workload on `cluster`'s ranks; sets cluster->nic_of_rank.
// Errors: a job's rank placed outside the cluster or on a rank another job
// (or the same) already has; the jobs' iteration counts differ.
absl::StatusOr<Workload> CombineJobs(std::vector<Job> jobs, Cluster* cluster);

// Job `job` of `w` alone: the other jobs' ranks idle, their comms unused.
Workload OnlyJob(const Workload& w, int job);

// The test bed's 2-rail presets (bench/e2e/rails_job.sh): a data-parallel
// job (one stage, a replica per host) on local rank 0 of every host and a
// pipeline job (a stage per host, one replica) on local rank 1, both from
// examples/hybrid_parallel's `contention` preset and `flags`; "rails-split"
// puts the pipeline job on rail 1, "rails-shared" both on rail 0. The
// cluster must be the 2-NIC test bed with 2 ranks per host.
absl::StatusOr<Workload> RailsPreset(const std::string& name, const std::vector<std::string>& flags, Cluster* cluster);
bool IsRailsPreset(const std::string& name);

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_WORKLOADS_JOBS_H_
