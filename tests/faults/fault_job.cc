#include "faults/fault_job.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "config.h"
#include "gtest/gtest.h"
#include "reference.h"

namespace trirace::faults {
namespace {

using Clock = std::chrono::steady_clock;

// The model every fault job trains: two pipeline stages of two replicas,
// 2BW, with gradients large enough (16 MiB buckets) that a stopped
// receiver's socket buffers fill.
std::vector<std::string> ModelFlags(int iterations) {
  return {"--preset", "tiny", "--stages", "2", "--replicas", "2", "--schedule", "2bw",
          "--iterations", std::to_string(iterations), "--grad-kb", "4096", "--bucket-kb", "16384"};
}

std::string Expected(const std::vector<std::string>& flags) {
  hybrid::Config c;
  std::string error;
  if (!hybrid::ParseArgs(flags, &c, &error)) return "bad flags: " + error;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(hybrid::ComputeExpected(c).checksum));
  return buf;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string JobEnd::Describe() const {
  std::ostringstream s;
  s << "exit " << exit_code << (timed_out ? " (timed out)" : "") << ", " << seconds_after_fault
    << " s after the fault\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    s << "rank " << r << ": exit " << ranks[r].exit_code << " at " << ranks[r].seconds_after_fault << " s\n";
  }
  s << "--- testbed.sh:\n" << script_err;
  for (size_t r = 0; r < rank_out.size(); ++r) {
    s << "--- rank " << r << " out:\n" << rank_out[r].substr(0, 400) << "\n--- rank " << r << " err:\n"
      << rank_err[r].substr(0, 1500) << "\n";
  }
  return s.str();
}

FaultJob::FaultJob(const testbed::Testbed& tb, JobOptions options) : tb_(tb), options_(std::move(options)) {}

FaultJob::~FaultJob() {
  group_.reset();  // kills testbed.sh if still running, which kills its ranks
  if (!out_dir_.empty()) std::filesystem::remove_all(out_dir_);
}

bool FaultJob::Start() {
  out_dir_ = testing_support::MakeTempDir("fault-job");
  shm_before_ = ShmEntries("trirace-hostccl-");
  std::vector<std::string> argv = {TESTBED_SH, "run", "--name", tb_.name, "--out", out_dir_,
                                   "--ranks-per-host", std::to_string(options_.ranks_per_host),
                                   "--timeout", "140"};
  if (options_.keep_going) argv.push_back("--keep-going");
  std::vector<std::string> env = {std::string("NCCL_NET_PLUGIN=") + NET_PLUGIN,
                                  std::string("LD_PRELOAD=") + SHIM_PATH,
                                  "TRIRACE_MODE=schedule",
                                  "TRIRACE_POLICY=" + options_.policy,
                                  "TRIRACE_NET_TIMEOUT_MS=" + std::to_string(kNetTimeoutMs)};
  env.insert(env.end(), options_.env.begin(), options_.env.end());
  for (const std::string& e : env) argv.insert(argv.end(), {"--env", e});
  argv.insert(argv.end(), {"--", HYBRID_BIN, "--timeout", "130"});
  for (const std::string& f : ModelFlags(options_.iterations)) argv.push_back(f);
  group_ = std::make_unique<testing_support::ChildGroup>(160000);
  index_ = group_->Start(argv);
  return index_ >= 0;
}

std::vector<pid_t> FaultJob::RankPids(int host) const {
  std::vector<std::pair<int, pid_t>> found;
  FILE* p = popen(("ip netns pids " + HostNs(tb_, host) + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return {};
  int pid = 0;
  while (std::fscanf(p, "%d", &pid) == 1) {
    const std::string proc = "/proc/" + std::to_string(pid);
    if (Slurp(proc + "/comm") != "hybrid_parallel\n") continue;
    std::string environ = Slurp(proc + "/environ");
    std::smatch m;
    static const std::regex kLocal(std::string("(^|") + '\0' + ")LOCAL_RANK=([0-9]+)");
    int local = std::regex_search(environ, m, kLocal) ? std::stoi(m[2]) : 99;
    found.push_back({local, pid});
  }
  pclose(p);
  std::sort(found.begin(), found.end());
  std::vector<pid_t> pids;
  for (const auto& [local, pid] : found) pids.push_back(pid);
  return pids;
}

int FaultJob::RanksRunning() const {
  int n = 0;
  for (int h = 0; h < tb_.hosts; ++h) n += static_cast<int>(RankPids(h).size());
  return n;
}

bool FaultJob::WaitForRanks() {
  const int want = tb_.hosts * options_.ranks_per_host;
  if (!group_->PumpUntil([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return RanksRunning() == want;
      })) {
    ADD_FAILURE() << "the job ended before all " << want << " ranks ran: " << group_->result(index_).err;
    return false;
  }
  return true;
}

bool FaultJob::AllRanksRun() {
  const int want = tb_.hosts * options_.ranks_per_host;
  const int running = RanksRunning();
  if (running != want) {
    ADD_FAILURE() << "only " << running << " of " << want << " ranks still run at the fault: make the job longer";
    return false;
  }
  return true;
}

void FaultJob::MarkFault() {
  fault_at_ = Clock::now();
  fault_wall_ = std::chrono::system_clock::now();
  faulted_ = true;
}

JobEnd FaultJob::Finish(int timeout_ms) {
  JobEnd end;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  group_->PumpUntil([&] { return Clock::now() >= deadline; });
  const auto ended = Clock::now();
  std::vector<testing_support::ProcessResult> results = group_->Wait();
  const testing_support::ProcessResult& r = results[static_cast<size_t>(index_)];
  end.exit_code = r.exit_code;
  end.timed_out = r.timed_out || ended >= deadline;
  end.script_err = r.err;
  if (faulted_) end.seconds_after_fault = std::chrono::duration<double>(ended - fault_at_).count();
  for (int rank = 0;; ++rank) {
    const std::string base = out_dir_ + "/rank-" + std::to_string(rank);
    if (!std::filesystem::exists(base + ".out")) break;
    end.rank_out.push_back(Slurp(base + ".out"));
    end.rank_err.push_back(Slurp(base + ".err"));
  }
  std::istringstream tsv(Slurp(out_dir_ + "/ranks.tsv"));
  std::string line;
  std::getline(tsv, line);  // header
  const double fault_ms = std::chrono::duration<double, std::milli>(fault_wall_.time_since_epoch()).count();
  while (std::getline(tsv, line)) {
    std::vector<std::string> f;
    std::istringstream cols(line);
    for (std::string c; std::getline(cols, c, '\t');) f.push_back(c);
    RankEnd re;
    if (f.size() >= 4 && f[3] != "killed") re.exit_code = std::atoi(f[3].c_str());
    if (faulted_ && f.size() >= 5 && !f[4].empty()) re.seconds_after_fault = (std::atof(f[4].c_str()) - fault_ms) / 1000;
    end.ranks.push_back(re);
  }
  std::smatch m;
  static const std::regex kChecksum("RESULT .*\"checksum\":\"([0-9a-f]{16})\"");
  if (!end.rank_out.empty() && std::regex_search(end.rank_out[0], m, kChecksum)) end.checksum = m[1];
  end.expected = Expected(ModelFlags(options_.iterations));
  end.left_in_shm = ShmEntries(tb_.name);
  for (const std::string& e : ShmEntries("trirace-hostccl-")) {
    if (std::find(shm_before_.begin(), shm_before_.end(), e) == shm_before_.end()) end.left_in_shm.push_back(e);
  }
  return end;
}

int Shell(const std::string& command, bool must_succeed) {
  int status = std::system(command.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (must_succeed) {
    EXPECT_EQ(code, 0) << command;
  }
  return code;
}

std::string FabricNs(const testbed::Testbed& tb) { return tb.name + "-fab"; }
std::string HostNs(const testbed::Testbed& tb, int i) { return tb.name + "-h" + std::to_string(i); }

std::vector<std::string> ShmEntries(const std::string& text) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(text) != std::string::npos) names.push_back(name);
  }
  return names;
}

}  // namespace trirace::faults
