// A connected send/receive comm pair between the two ranks of RunRanks:
// rank 0 listens and receives, rank 1 connects and sends, exactly as NCCL
// sets up a net connection (handle exchanged out of band).
#ifndef TRIRACE_TESTS_PLUGIN_NET_PAIR_H_
#define TRIRACE_TESTS_PLUGIN_NET_PAIR_H_

#include <memory>
#include <string>
#include <vector>

#include "plugin/net_harness.h"

namespace net_test {

struct Pair {
  std::unique_ptr<NetPlugin> net;
  int dev = 0;
  void* listen_comm = nullptr;  // rank 0
  void* recv_comm = nullptr;    // rank 0
  void* send_comm = nullptr;    // rank 1
  bool ok = false;

  // Loads `path` with table `version`, inits and connects. Failures are
  // reported as gtest failures (ok stays false).
  static Pair Connect(const std::string& path, int version, int rank, Channel& peer,
                      int traffic_class = -1);
  // Moves one message of `bytes` from rank 1 to rank 0 (rank 1 sends,
  // rank 0 receives into `data`, which has room for `bytes`), posting until
  // the plugin takes the request, then waiting for it. Reported as gtest
  // failures; false on any.
  bool MoveOne(int rank, void* data, size_t bytes);
  // Closes whatever is open.
  void Close();
};

// Environment every test rank gets: loopback only, a private job id.
Env BaseEnv(const std::string& tag);

// Checks RunRanks' exit codes: rank 0 passed, rank 1 ended with
// `rank1_expected`.
void ExpectRanksPassed(const std::vector<int>& codes, int rank1_expected = 0);

// The value of socket option (level, name) on every IPv4 TCP socket this
// process has open (e.g. IPPROTO_IP/IP_TOS, SOL_SOCKET/SO_PRIORITY).
std::vector<int> TcpSocketOptionValues(int level, int name);

}  // namespace net_test

#endif  // TRIRACE_TESTS_PLUGIN_NET_PAIR_H_
