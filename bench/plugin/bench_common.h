// Shared pieces of the net_bandwidth benchmark: the measurement settings,
// a process pair connected by a socketpair, and the two sides measured
// (the plugin through its ncclNetPlugin_v11 table, and raw TCP sockets).
#ifndef TRIRACE_BENCH_PLUGIN_BENCH_COMMON_H_
#define TRIRACE_BENCH_PLUGIN_BENCH_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace net_bench {

struct Settings {
  size_t message_bytes = 0;
  uint64_t total_bytes = 0;  // per throughput measurement
  int window = 8;            // outstanding messages (NCCL keeps 8 steps in flight)
  int nsocks = 4;
  int nthreads = 2;
  size_t stripe_min_bytes = 262144;  // smaller messages go whole over one socket
  int iterations = 20000;    // latency round trips
  std::string plugin_path;
};

// A blocking channel to the other process of the pair.
class Link {
 public:
  explicit Link(int fd) : fd_(fd) {}
  bool Send(const void* p, size_t n);
  bool Recv(void* p, size_t n);
  bool Barrier();
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Runs fn(rank, link) in two forked processes; rank 0's return value (a
// figure: GB/s or microseconds) is passed back. Negative on failure.
double RunPair(const std::function<double(int rank, Link& link)>& fn);

double NowSeconds();

// Throughput in GB/s (1e9 bytes/s) measured at the receiver (rank 0).
double PluginThroughput(int rank, Link& link, const Settings& s);
// `polling_caller`: the calling thread, instead of sleeping until the
// transfer threads finish, waits as NCCL's proxy thread waits on a plugin:
// it checks a completion counter and yields, in a loop. This is the CPU a
// proxy-model caller costs on top of raw TCP, whichever transport it drives.
double RawThroughput(int rank, Link& link, const Settings& s, bool polling_caller);
// Average 8-byte round trip in microseconds, measured at rank 0.
double PluginRoundTrip(int rank, Link& link, const Settings& s);
// `polling`: the receiver polls a non-blocking socket (and yields) as a
// proxy thread polls test(), instead of sleeping in a blocking recv.
// `one_way_pair`: each direction on its own connection, as two net comms.
double RawRoundTrip(int rank, Link& link, const Settings& s, bool polling, bool one_way_pair);

// The parts a message of `size` is striped into over `nsocks` sockets: the
// same rule as the plugin (0 below stripe_min: the message goes whole over
// the control socket; else at least 16 KiB per part).
int PartsFor(size_t size, const Settings& s);

}  // namespace net_bench

#endif  // TRIRACE_BENCH_PLUGIN_BENCH_COMMON_H_
