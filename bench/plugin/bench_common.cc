#include "bench/plugin/bench_common.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace net_bench {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool Link::Send(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t r = ::send(fd_, c, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool Link::Recv(void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = ::recv(fd_, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool Link::Barrier() {
  char token = 'b';
  return Send(&token, 1) && Recv(&token, 1);
}

double RunPair(const std::function<double(int rank, Link& link)>& fn) {
  int sp[2];
  int result_pipe[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0 || pipe(result_pipe) != 0) return -1;
  fflush(stdout);
  pid_t pids[2];
  for (int rank = 0; rank < 2; ++rank) {
    pids[rank] = fork();
    if (pids[rank] == 0) {
      close(sp[1 - rank]);
      close(result_pipe[0]);
      Link link(sp[rank]);
      double v = fn(rank, link);
      if (rank == 0 && write(result_pipe[1], &v, sizeof(v)) != sizeof(v)) _exit(2);
      _exit(v < 0 ? 1 : 0);
    }
  }
  close(sp[0]);
  close(sp[1]);
  close(result_pipe[1]);
  double v = -1;
  if (read(result_pipe[0], &v, sizeof(v)) != sizeof(v)) v = -1;
  close(result_pipe[0]);
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) v = -1;
  }
  return v;
}

int PartsFor(size_t size, const Settings& s) {
  if (size < s.stripe_min_bytes) return 0;
  return static_cast<int>(std::clamp<size_t>(size / 16384, 1, static_cast<size_t>(s.nsocks)));
}

}  // namespace net_bench
