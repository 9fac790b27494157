#include "sim/workloads/jobs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "config.h"
#include "sim/workloads/hybrid_example.h"

namespace trirace::sim {

absl::StatusOr<Workload> CombineJobs(std::vector<Job> jobs, Cluster* cluster) {
  const int n = cluster->ranks();
  Workload out;
  out.ranks.resize(size_t(n));
  out.job_of_rank.assign(size_t(n), -1);
  cluster->nic_of_rank.assign(size_t(n), 0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    Job& job = jobs[j];
    Workload& w = job.workload;
    if (job.ranks.size() != w.ranks.size()) {
      return absl::InvalidArgumentError(absl::StrCat("job ", job.name, " has ", w.ranks.size(),
                                                     " ranks but is placed on ", job.ranks.size()));
    }
    if (j > 0 && w.iterations != out.iterations) {
      return absl::InvalidArgumentError(absl::StrCat("job ", job.name, " runs ", w.iterations,
                                                     " iterations, the others ", out.iterations));
    }
    out.iterations = w.iterations;
    out.warmup = std::max(out.warmup, w.warmup);
    out.name += (j ? " + " : "") + job.name;
    out.job_names.push_back(job.name);
    const int comm_base = int(out.comms.size());
    for (CommSpec c : w.comms) {
      for (int& r : c.ranks) r = job.ranks[size_t(r)];
      c.name = job.name + "." + c.name;
      out.comms.push_back(std::move(c));
    }
    for (size_t r = 0; r < w.ranks.size(); ++r) {
      const int at = job.ranks[r];
      if (at < 0 || at >= n || out.job_of_rank[size_t(at)] >= 0) {
        return absl::InvalidArgumentError(absl::StrCat("job ", job.name, " rank ", r, " placed on rank ", at,
                                                       ", outside the cluster's ", n, " or already taken"));
      }
      RankProgram p = std::move(w.ranks[r]);
      for (NcclCall& c : p.calls) c.comm += comm_base;
      out.ranks[size_t(at)] = std::move(p);
      out.job_of_rank[size_t(at)] = int(j);
      if (r < job.nics.size()) cluster->nic_of_rank[size_t(at)] = job.nics[r];
    }
  }
  return out;
}

Workload OnlyJob(const Workload& w, int job) {
  Workload out = w;
  out.name = job < int(w.job_names.size()) ? w.job_names[size_t(job)] : w.name;
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    if (r < w.job_of_rank.size() && w.job_of_rank[r] != job) out.ranks[r] = RankProgram{};
  }
  out.job_of_rank.clear();
  out.job_names.clear();
  return out;
}

bool IsRailsPreset(const std::string& name) { return name == "rails-split" || name == "rails-shared"; }

absl::StatusOr<Workload> RailsPreset(const std::string& name, const std::vector<std::string>& flags, Cluster* cluster) {
  if (!IsRailsPreset(name)) return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a rails preset"));
  const int hosts = cluster->hosts();
  if (cluster->ranks_per_host != 2 || cluster->system.hosts[0].nics.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("--preset ", name, " needs the test bed with 2 NICs and 2 ranks per "
                                                   "host (--cluster testbed --nics 2)"));
  }
  std::vector<Job> jobs;
  for (int job = 0; job < 2; ++job) {
    // rails_job.sh's shapes: `contention` with a replica per host (DP) or a
    // stage per host (pipeline), then the caller's flags.
    std::vector<std::string> args = {"--preset", "contention"};
    if (job == 0) {
      args.insert(args.end(), {"--stages", "1", "--replicas", std::to_string(hosts)});
    } else {
      args.insert(args.end(), {"--stages", std::to_string(hosts), "--replicas", "1"});
    }
    args.insert(args.end(), flags.begin(), flags.end());
    hybrid::Config c;
    std::string error;
    if (!hybrid::ParseArgs(args, &c, &error)) return absl::InvalidArgumentError(error);
    absl::StatusOr<Workload> w = HybridExampleWorkload(c);
    if (!w.ok()) return w.status();
    Job j{job == 0 ? "dp" : "pp", *std::move(w), {}, {}};
    for (int h = 0; h < hosts; ++h) {
      j.ranks.push_back(2 * h + job);
      j.nics.push_back(name == "rails-split" ? job : 0);
    }
    jobs.push_back(std::move(j));
  }
  absl::StatusOr<Workload> out = CombineJobs(std::move(jobs), cluster);
  if (out.ok()) out->name = name;
  return out;
}

}  // namespace trirace::sim
