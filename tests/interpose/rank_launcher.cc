#include "rank_launcher.h"

#include <utility>

namespace trirace::interpose::testing {

std::string WithoutUidLine(const std::string& out) {
  if (out.rfind("uid ", 0) != 0) return out;
  const size_t nl = out.find('\n');
  return nl == std::string::npos ? std::string() : out.substr(nl + 1);
}

std::vector<std::string> RandomRanksArgv(const std::string& program, const std::string& library, int rank,
                                         int nranks, uint64_t seed, int ops) {
  return {program, "--lib", library, "--rank", std::to_string(rank), "--nranks", std::to_string(nranks),
          "--seed", std::to_string(seed), "--ops", std::to_string(ops)};
}

std::vector<testing_support::ProcessResult> LaunchRanks(const RankJob& job) {
  testing_support::ChildGroup ranks(job.timeout_ms);
  ranks.Start(job.argv(0), job.set_env, job.unset_env);
  std::string uid;
  ranks.PumpUntil([&] {
    const std::string& out = ranks.result(0).out;
    const size_t nl = out.find('\n');
    if (out.rfind("uid ", 0) == 0 && nl != std::string::npos) uid = out.substr(4, nl - 4);
    return !uid.empty();
  });
  std::vector<testing_support::ProcessResult> not_started;
  for (int r = 1; r < job.nranks; ++r) {
    if (uid.empty()) {
      testing_support::ProcessResult missing;
      missing.err = "not started: rank 0 printed no uid line";
      not_started.push_back(std::move(missing));
      continue;
    }
    std::vector<std::string> argv = job.argv(r);
    argv.push_back("--uid");
    argv.push_back(uid);
    ranks.Start(argv, job.set_env, job.unset_env);
  }
  std::vector<testing_support::ProcessResult> results = ranks.Wait();
  for (auto& r : not_started) results.push_back(std::move(r));
  return results;
}

}  // namespace trirace::interpose::testing
