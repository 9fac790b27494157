#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>

extern char** environ;

namespace testing_support {
namespace {

std::vector<std::string> ChildEnvironment(const EnvList& set, const std::vector<std::string>& unset) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& name : unset) env.erase(name);
  for (const auto& [k, v] : set) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

ChildGroup::ChildGroup(int timeout_ms)
    : deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)) {}

ChildGroup::~ChildGroup() {
  KillRemaining();
  Wait();
}

int ChildGroup::Start(const std::vector<std::string>& argv, const EnvList& set,
                      const std::vector<std::string>& unset) {
  children_.emplace_back();
  Child& c = children_.back();
  const int index = static_cast<int>(children_.size()) - 1;
  std::vector<std::string> env = ChildEnvironment(set, unset);
  std::vector<std::string> args = argv;
  std::vector<char*> argp, envp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error("pipe2 failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  const int rc = posix_spawnp(&c.pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    c.pid = -1;
    c.exited = true;
    c.result.exit_code = 127;
    c.result.err = std::string("spawn failed: ") + std::strerror(rc);
    return index;
  }
  c.out_fd = out_pipe[0];
  c.err_fd = err_pipe[0];
  return index;
}

void ChildGroup::Pump(int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, bool>> owners;  // (child, is stdout)
  for (Child& c : children_) {
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
    const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
    if (n > 0) {
      (is_out ? c->result.out : c->result.err).append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      close(fds[i].fd);
      (is_out ? c->out_fd : c->err_fd) = -1;
    }
  }
}

void ChildGroup::Reap() {
  for (Child& c : children_) {
    if (c.exited || c.pid < 0 || c.out_fd >= 0 || c.err_fd >= 0) continue;
    int status = 0;
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    c.exited = true;
    c.result.exit_code = ExitCode(status);
  }
}

bool ChildGroup::AllDone() const {
  for (const Child& c : children_) {
    if (!c.exited || c.out_fd >= 0 || c.err_fd >= 0) return false;
  }
  return true;
}

void ChildGroup::KillRemaining() {
  for (Child& c : children_) {
    if (c.exited || c.pid < 0) continue;
    kill(c.pid, SIGKILL);
    c.result.timed_out = true;
  }
}

bool ChildGroup::PumpUntil(const std::function<bool()>& done) {
  while (!done()) {
    Reap();
    if (AllDone() || std::chrono::steady_clock::now() >= deadline_) return done();
    Pump(100);
  }
  return true;
}

std::vector<ProcessResult> ChildGroup::Wait() {
  PumpUntil([this] {
    Reap();
    return AllDone();
  });
  if (!AllDone()) {  // the deadline passed
    KillRemaining();
    for (Child& c : children_) {
      if (c.out_fd >= 0) close(c.out_fd);
      if (c.err_fd >= 0) close(c.err_fd);
      c.out_fd = c.err_fd = -1;
    }
    Reap();
  }
  std::vector<ProcessResult> results;
  for (const Child& c : children_) results.push_back(c.result);
  return results;
}

ProcessResult RunProcess(const std::vector<std::string>& argv, const EnvList& set,
                         const std::vector<std::string>& unset, int timeout_ms) {
  ChildGroup group(timeout_ms);
  group.Start(argv, set, unset);
  return group.Wait()[0];
}

std::string MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

}  // namespace testing_support
