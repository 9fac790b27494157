#include "soak_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace trirace::soak {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The child side of fork(): environment, fds, exec. Never returns.
[[noreturn]] void ExecRank(const Options& o, int rank, const RankRun& files, int out_fd,
                           const std::vector<int>& uid_fds, pid_t launcher) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(126);  // the launcher died before prctl
  dup2(out_fd, STDOUT_FILENO);
  std::string fds;
  for (int fd : uid_fds) {
    fcntl(fd, F_SETFD, 0);  // survive exec; every other pipe end is close-on-exec
    fds += (fds.empty() ? "" : ",") + std::to_string(fd);
  }
  const std::pair<const char*, std::string> env[] = {
      {"LD_PRELOAD", o.shim},
      {"TRIRACE_NCCL_LIBRARY", o.nccl},
      {"TRIRACE_MODE", "schedule"},
      {"TRIRACE_POLICY", "trirace"},
      {"TRIRACE_TRACE", files.trace_path},
      {"TRIRACE_TRACE_BUFFER_MB", std::to_string(o.trace_buffer_mb)},
      {"TRIRACE_DEBUG", "INFO"},
      {"TRIRACE_DEBUG_SUBSYS", "ALL"},
      {"TRIRACE_DEBUG_FILE", files.log_path},
      {"TRIRACE_JOB_ID", o.job},
  };
  for (const auto& [name, value] : env) setenv(name, value.c_str(), 1);
  std::vector<std::string> args = {
      "soak_ranks",      "--rank",   std::to_string(rank),        "--nranks",  std::to_string(o.nranks),
      "--ops",           std::to_string(o.ops), "--comms", std::to_string(o.comms), "--alive", std::to_string(o.alive),
      "--samples",       std::to_string(o.samples), "--seed", std::to_string(o.seed), "--shim", o.shim,
      "--nccl",          o.nccl,     "--log",  files.log_path,    "--job",     o.job,
      "--uid-fds",       fds};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "soak: cannot start rank %d: %s\n", rank, std::strerror(errno));
  _exit(127);
}

}  // namespace

Run LaunchRanks(const Options& o, const std::string& dir) {
  Run run;
  const Clock::time_point start = Clock::now();
  const int n = o.nranks;
  run.ranks.resize(static_cast<size_t>(n));
  // uid[r]: rank 0 -> rank r (r >= 1); out[r]: rank r's stdout.
  std::vector<std::array<int, 2>> uid(static_cast<size_t>(n), {-1, -1}), out(static_cast<size_t>(n), {-1, -1});
  for (int r = 0; r < n; ++r) {
    if ((r > 0 && pipe2(uid[r].data(), O_CLOEXEC) != 0) || pipe2(out[r].data(), O_CLOEXEC) != 0) {
      run.failure = std::string("pipe: ") + std::strerror(errno);
      return run;
    }
  }
  const pid_t self = getpid();
  for (int r = 0; r < n; ++r) {
    RankRun& rr = run.ranks[r];
    rr.trace_path = dir + "/rank" + std::to_string(r) + ".trace.json";
    rr.log_path = dir + "/rank" + std::to_string(r) + ".log";
    std::vector<int> fds;
    if (r == 0) {
      for (int p = 1; p < n; ++p) fds.push_back(uid[p][1]);
    } else {
      fds.push_back(uid[r][0]);
    }
    std::fflush(nullptr);
    rr.pid = fork();
    if (rr.pid == 0) ExecRank(o, r, rr, out[r][1], fds, self);
    if (rr.pid < 0) {
      run.failure = std::string("fork: ") + std::strerror(errno);
      break;
    }
  }
  // Only the ranks hold the pipes now, so a dead rank 0 is EOF to the others.
  for (int r = 0; r < n; ++r) {
    for (int fd : {uid[r][0], uid[r][1], out[r][1]}) {
      if (fd >= 0) close(fd);
    }
  }

  std::vector<std::string> partial(static_cast<size_t>(n));
  std::vector<Clock::time_point> heard(static_cast<size_t>(n), start);
  std::vector<bool> reading(static_cast<size_t>(n), true), done(static_cast<size_t>(n), false);
  auto handle_line = [&](int r, const std::string& line) {
    RankRun& rr = run.ranks[r];
    Sample s;
    if (ParseSample(line, &s)) {
      rr.samples.push_back(s);
      rr.last_ops = s.ops;
      if (r == 0 && !o.quiet) {
        std::fprintf(stderr, "soak: %" PRId64 " of %" PRId64 " ops, %" PRId64 " comms, %.0f s\n", s.ops, o.ops,
                     s.comms_created, Since(start));
      }
    } else if (ParseResult(line, &rr.result)) {
      rr.has_result = true;
    } else if (line.rfind("progress ", 0) == 0) {
      const size_t at = line.find("ops=");
      if (at != std::string::npos) rr.last_ops = std::strtoll(line.c_str() + at + 4, nullptr, 10);
    } else {
      std::fprintf(stderr, "rank %d: %s\n", r, line.c_str());
    }
  };
  auto kill_all = [&](const std::string& why) {
    if (run.failure.empty()) run.failure = why;
    for (int r = 0; r < n; ++r) {
      if (!done[r] && run.ranks[r].pid > 0) kill(run.ranks[r].pid, SIGKILL);
    }
  };
  int finished = 0;
  for (int r = 0; r < n; ++r) {
    if (run.ranks[r].pid > 0) continue;  // never started
    done[r] = true;
    reading[r] = false;
    close(out[r][0]);
    ++finished;
  }
  if (!run.failure.empty()) kill_all(run.failure);
  auto any_open = [&] {
    for (int r = 0; r < n; ++r) {
      if (reading[r]) return true;
    }
    return false;
  };
  while (finished < n || any_open()) {
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (int r = 0; r < n; ++r) {
      if (reading[r]) {
        fds.push_back({out[r][0], POLLIN, 0});
        who.push_back(r);
      }
    }
    if (!fds.empty()) poll(fds.data(), fds.size(), 500);
    else usleep(50000);
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const int r = who[i];
      char buf[4096];
      const ssize_t got = read(out[r][0], buf, sizeof(buf));
      if (got <= 0) {
        reading[r] = false;
        close(out[r][0]);
        continue;
      }
      heard[r] = Clock::now();
      partial[r].append(buf, static_cast<size_t>(got));
      for (size_t nl; (nl = partial[r].find('\n')) != std::string::npos;) {
        handle_line(r, partial[r].substr(0, nl));
        partial[r].erase(0, nl + 1);
      }
    }
    for (int r = 0; r < n; ++r) {
      RankRun& rr = run.ranks[r];
      if (done[r] || rr.pid <= 0) continue;
      int status = 0;
      if (waitpid(rr.pid, &status, WNOHANG) != rr.pid) continue;
      done[r] = true;
      ++finished;
      if (WIFEXITED(status)) rr.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) rr.signal = WTERMSIG(status);
      if (rr.exit_code != 0) {
        const std::string how = rr.signal != 0 ? "was killed by signal " + std::to_string(rr.signal)
                                               : "exited with status " + std::to_string(rr.exit_code);
        kill_all("rank " + std::to_string(r) + " " + how + " at op " + std::to_string(rr.last_ops));
      }
    }
    // A stopped rank leaves its peers waiting in a collective: name every silent one.
    std::string silent;
    for (int r = 0; r < n && run.failure.empty(); ++r) {
      if (done[r] || Since(heard[r]) <= o.stall_s) continue;
      silent += (silent.empty() ? "rank " : ", rank ") + std::to_string(r) + " after op " +
                std::to_string(run.ranks[r].last_ops);
    }
    if (!silent.empty()) kill_all("hung: nothing for " + std::to_string(o.stall_s) + " s from " + silent);
    if (o.timeout_s > 0 && Since(start) > o.timeout_s && run.failure.empty()) {
      kill_all("the run passed --timeout-s " + std::to_string(o.timeout_s));
    }
    if (!run.failure.empty() && finished < n) kill_all(run.failure);
  }
  for (int r = 0; r < n; ++r) {
    if (reading[r]) close(out[r][0]);
  }
  run.seconds = Since(start);
  return run;
}

}  // namespace trirace::soak
