// The baseline: plain blocking TCP sockets on loopback, messages striped
// over the same number of sockets and moved by the same number of threads
// as the plugin, with the same window of messages in flight.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/plugin/bench_common.h"

namespace net_bench {
namespace {

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool RecvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, MSG_WAITALL);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Non-blocking receive polled like a proxy thread polls test().
bool PollRecvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r == 0) return false;
    if (r < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      sched_yield();
      continue;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// `count` connected loopback sockets: rank 0 accepts, rank 1 connects.
std::vector<int> Connect(int rank, Link& link, int count) {
  std::vector<int> fds;
  int one = 1;
  if (rank == 0) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !link.Send(&addr, sizeof(addr))) {
      return {};
    }
    for (int i = 0; i < count; ++i) {
      int fd = accept(lfd, nullptr, nullptr);
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      fds.push_back(fd);
    }
    close(lfd);
  } else {
    sockaddr_in addr{};
    if (!link.Recv(&addr, sizeof(addr))) return {};
    for (int i = 0; i < count; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return {};
      fds.push_back(fd);
    }
  }
  return fds;
}

}  // namespace

double RawThroughput(int rank, Link& link, const Settings& s, bool polling_caller) {
  // Like a plugin comm: socket 0 carries whole small messages, 1..nsocks the
  // parts of striped ones, each data socket served by thread k % nthreads.
  std::vector<int> fds = Connect(rank, link, s.nsocks + 1);
  if (fds.empty()) return -1;
  const uint64_t messages = s.total_bytes / s.message_bytes;
  const int nparts = PartsFor(s.message_bytes, s);
  std::vector<std::vector<char>> bufs(s.window, std::vector<char>(s.message_bytes, 1));
  const int nthreads = std::max(1, std::min(s.nthreads, nparts));
  if (!link.Barrier()) return -1;
  double t0 = NowSeconds();
  std::vector<std::thread> threads;
  std::vector<char> ok(nthreads, 1);
  std::atomic<int> finished{0};
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t m = 0; m < messages && ok[t]; ++m) {
        char* base = bufs[m % s.window].data();
        if (nparts == 0) {
          bool done = rank == 0 ? RecvAll(fds[0], base, s.message_bytes) : SendAll(fds[0], base, s.message_bytes);
          if (!done) ok[t] = 0;
          continue;
        }
        for (int k = t; k < nparts; k += nthreads) {
          size_t begin = s.message_bytes * k / nparts;
          size_t end = s.message_bytes * (k + 1) / nparts;
          bool done = rank == 0 ? RecvAll(fds[k + 1], base + begin, end - begin)
                                : SendAll(fds[k + 1], base + begin, end - begin);
          if (!done) ok[t] = 0;
        }
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  if (polling_caller) {
    while (finished.load(std::memory_order_acquire) < nthreads) sched_yield();
  }
  for (std::thread& th : threads) th.join();
  double t1 = NowSeconds();
  link.Barrier();
  for (int fd : fds) close(fd);
  for (char c : ok) {
    if (!c) return -1;
  }
  return static_cast<double>(messages * s.message_bytes) / (t1 - t0) / 1e9;
}

double RawRoundTrip(int rank, Link& link, const Settings& s, bool polling, bool one_way_pair) {
  // one_way_pair: each direction on its own connection, as with net plugin comms.
  std::vector<int> fds = Connect(rank, link, one_way_pair ? 2 : 1);
  if (fds.empty()) return -1;
  const int out_fd = one_way_pair ? fds[rank] : fds[0];
  const int in_fd = one_way_pair ? fds[1 - rank] : fds[0];
  char msg[8] = {};
  const int warmup = s.iterations / 10;
  double t0 = 0;
  for (int i = 0; i < warmup + s.iterations; ++i) {
    if (i == warmup) t0 = NowSeconds();
    auto recv8 = [&] { return polling ? PollRecvAll(in_fd, msg, 8) : RecvAll(in_fd, msg, 8); };
    bool ok = rank == 0 ? SendAll(out_fd, msg, 8) && recv8() : recv8() && SendAll(out_fd, msg, 8);
    if (!ok) return -1;
  }
  double t1 = NowSeconds();
  for (int fd : fds) close(fd);
  return (t1 - t0) / s.iterations * 1e6;
}

}  // namespace net_bench
