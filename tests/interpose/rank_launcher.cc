#include "rank_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>

extern char** environ;

namespace trirace::interpose::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  bool exited = false;
  testing_support::ProcessResult result;
};

std::vector<std::string> MakeEnv(const RankJob& job) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& name : job.unset_env) env.erase(name);
  for (const auto& [k, v] : job.set_env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

bool Spawn(const std::vector<std::string>& argv, std::vector<std::string> env, Child* c) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return false;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> args = argv;
  std::vector<char*> argp, envp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int rc = posix_spawnp(&c->pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  c->out_fd = out_pipe[0];
  c->err_fd = err_pipe[0];
  if (rc != 0) {
    c->result.err = std::string("spawn failed: ") + std::strerror(rc);
    c->exited = true;
    c->pid = -1;
  }
  return rc == 0;
}

// Reads what is available from the open pipes of `children` for up to
// `wait_ms`; closes a pipe at EOF.
void Pump(std::vector<Child>& children, int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, bool>> owners;  // (child, is stdout)
  for (auto& c : children) {
    if (c.out_fd >= 0) {
      fds.push_back({c.out_fd, POLLIN, 0});
      owners.push_back({&c, true});
    }
    if (c.err_fd >= 0) {
      fds.push_back({c.err_fd, POLLIN, 0});
      owners.push_back({&c, false});
    }
  }
  if (fds.empty()) return;
  if (poll(fds.data(), fds.size(), wait_ms) <= 0) return;
  char buf[65536];
  for (size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    auto [c, is_out] = owners[i];
    ssize_t n = read(fds[i].fd, buf, sizeof(buf));
    if (n > 0) {
      (is_out ? c->result.out : c->result.err).append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      close(fds[i].fd);
      (is_out ? c->out_fd : c->err_fd) = -1;
    }
  }
}

void Reap(Child& c, bool block) {
  if (c.exited || c.pid < 0) return;
  int status = 0;
  if (waitpid(c.pid, &status, block ? 0 : WNOHANG) == c.pid) {
    c.exited = true;
    c.result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
}

}  // namespace

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
  const std::vector<std::string> env = MakeEnv(job);
  const auto deadline = Clock::now() + std::chrono::milliseconds(job.timeout_ms);
  std::vector<Child> children(job.nranks);
  Spawn(job.argv(0), env, &children[0]);
  std::string uid;
  while (uid.empty() && Clock::now() < deadline && children[0].out_fd >= 0) {
    Pump(children, 100);
    const std::string& out = children[0].result.out;
    const size_t nl = out.find('\n');
    if (out.rfind("uid ", 0) == 0 && nl != std::string::npos) uid = out.substr(4, nl - 4);
  }
  if (!uid.empty()) {
    for (int r = 1; r < job.nranks; ++r) {
      std::vector<std::string> argv = job.argv(r);
      argv.push_back("--uid");
      argv.push_back(uid);
      Spawn(argv, env, &children[r]);
    }
  } else {
    for (int r = 1; r < job.nranks; ++r) children[r].result.err = "not started: rank 0 printed no uid line";
    for (int r = 1; r < job.nranks; ++r) children[r].exited = true;
  }
  for (;;) {
    Pump(children, 100);
    bool all_done = true;
    for (auto& c : children) {
      if (c.out_fd < 0 && c.err_fd < 0) Reap(c, /*block=*/true);
      all_done &= c.exited && c.out_fd < 0 && c.err_fd < 0;
    }
    if (all_done) break;
    if (Clock::now() >= deadline) {
      for (auto& c : children) {
        if (!c.exited && c.pid > 0) {
          kill(c.pid, SIGKILL);
          c.result.timed_out = true;
        }
      }
      for (auto& c : children) {
        Reap(c, /*block=*/true);
        if (c.out_fd >= 0) close(c.out_fd);
        if (c.err_fd >= 0) close(c.err_fd);
        c.out_fd = c.err_fd = -1;
      }
      break;
    }
  }
  std::vector<testing_support::ProcessResult> results;
  for (auto& c : children) results.push_back(std::move(c.result));
  return results;
}

}  // namespace trirace::interpose::testing
