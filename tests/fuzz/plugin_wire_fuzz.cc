// Fuzz target: what a stranger can send to the net plugin's listening port.
// The plugin (NET_PLUGIN, loaded as NCCL loads it) listens on loopback once.
// Per input, the first byte picks what is sent:
//   even: the input's bytes on a new connection, as anyone on the network
//         could send them: the listener must drop the connection, never
//         accept it, never crash or hang;
//   odd:  a comm with valid hellos (this listener's token, as a peer of the
//         same job would send), then the input from byte 3 on as the frames
//         on its control socket and its data socket (byte 2 splits them),
//         while one receive is posted: the receive must end, done or with an
//         error, within a bound of test calls.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "plugin/loader/net_plugin_loader.h"
#include "plugin/transport/tcp/wire.h"

namespace {

namespace tcp = trirace::net::tcp;

void QuietLogger(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}

struct Listener {
  trirace::net::NetPlugin plugin;
  void* ctx = nullptr;
  void* listen_comm = nullptr;
  tcp::ConnectHandle handle{};
};

Listener* g = nullptr;

int Connect(const tcp::SockAddr& addr) {
  const int fd = socket(addr.u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const socklen_t len = addr.u.sa.sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (connect(fd, &addr.u.sa, len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const uint8_t* data, size_t len) {
  while (len > 0) {
    const ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
    if (n <= 0) return;  // the plugin closed it: what it may do
    data += n;
    len -= static_cast<size_t>(n);
  }
}

bool PeerClosed(int fd) {
  char b;
  const ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

void Pause() { std::this_thread::sleep_for(std::chrono::microseconds(50)); }

// Calls accept until `done` holds or the bound runs out; closes any comm it
// returns (a stranger's bytes must never make one: abort).
template <typename Done>
void* AcceptUntil(Done done, bool comm_allowed) {
  for (int i = 0; i < 4000 && !done(); ++i) {
    void* recv_comm = nullptr;
    ncclNetDeviceHandle_v11_t* dev = nullptr;
    if (g->plugin.api->Accept(g->listen_comm, &recv_comm, &dev) != ncclSuccess) return nullptr;
    if (recv_comm != nullptr) {
      if (!comm_allowed) std::abort();
      return recv_comm;
    }
    Pause();
  }
  return nullptr;
}

tcp::Hello ValidHello(uint16_t index, uint64_t conn_id) {
  tcp::Hello h{tcp::kHelloMagic, tcp::kWireVersion, index, 1, 0, 0, g->handle.token, g->handle.listener_id, conn_id};
  h.checksum = tcp::HelloChecksum(h);
  return h;
}

void Stranger(const uint8_t* data, size_t size) {
  const int fd = Connect(g->handle.addr);
  if (fd < 0) return;
  SendAll(fd, data, size);
  shutdown(fd, SHUT_WR);
  AcceptUntil([fd] { return PeerClosed(fd); }, /*comm_allowed=*/false);
  close(fd);
}

void Peer(const uint8_t* data, size_t size) {
  static std::mt19937_64 ids(42);
  const uint64_t conn_id = ids();
  const int control = Connect(g->handle.addr);
  const int payload = Connect(g->handle.addr);
  if (control >= 0 && payload >= 0) {
    const tcp::Hello h0 = ValidHello(0, conn_id), h1 = ValidHello(1, conn_id);
    SendAll(control, reinterpret_cast<const uint8_t*>(&h0), sizeof(h0));
    SendAll(payload, reinterpret_cast<const uint8_t*>(&h1), sizeof(h1));
    void* recv_comm = AcceptUntil([] { return false; }, /*comm_allowed=*/true);
    if (recv_comm != nullptr) {
      // Byte 1: the receive's tag; byte 2: how much goes to the control
      // socket (0: all; n: n * 8 bytes), the rest to the data socket.
      const size_t head = size < 3 ? size : 3;
      const size_t rest = size - head;
      const size_t to_control = size < 3 || data[2] == 0 ? rest : std::min<size_t>(rest, size_t{data[2]} * 8);
      SendAll(control, data + head, to_control);
      SendAll(payload, data + head + to_control, rest - to_control);
      shutdown(control, SHUT_WR);
      shutdown(payload, SHUT_WR);
      std::vector<char> buf(1 << 16);
      void* ptr = buf.data();
      size_t bytes = buf.size();
      int tag = size > 1 ? data[1] : 0;
      void* request = nullptr;
      if (g->plugin.api->Irecv(recv_comm, 1, &ptr, &bytes, &tag, nullptr, nullptr, &request) == ncclSuccess &&
          request != nullptr) {
        // The plugin's own bound is TRIRACE_NET_TIMEOUT_MS (set to 100 ms
        // below); 5 s without an answer is a hang.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        int done = 0, got = 0, i = 0;
        bool failed = false;
        for (; !done; ++i) {
          if (g->plugin.api->Test(request, &done, &got) != ncclSuccess) {
            failed = true;
            break;
          }
          if (std::chrono::steady_clock::now() > give_up) std::abort();  // neither done nor failed
          if (!done) Pause();
        }
        if (done && (got < 0 || static_cast<size_t>(got) > buf.size())) std::abort();
        if (std::getenv("TRIRACE_FUZZ_VERBOSE") != nullptr) {
          std::fprintf(stderr, "peer: receive %s after %d tests (%d bytes)\n", failed ? "failed" : "done", i, got);
        }
      }
      g->plugin.api->CloseRecv(recv_comm);
    } else if (std::getenv("TRIRACE_FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "peer: no comm accepted\n");
    }
  }
  if (control >= 0) close(control);
  if (payload >= 0) close(payload);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("TRIRACE_NET_IFNAME", "lo", 1);
  setenv("TRIRACE_NET_NSOCKS", "1", 1);
  setenv("TRIRACE_NET_TIMEOUT_MS", "100", 1);
  setenv("TRIRACE_JOB_ID", ("fuzz-" + std::to_string(getpid())).c_str(), 1);
  setenv("TRIRACE_DEBUG", "NONE", 1);
  absl::StatusOr<trirace::net::NetPlugin> plugin = trirace::net::LoadNetPlugin({NET_PLUGIN});
  if (!plugin.ok()) std::abort();
  g = new Listener{std::move(*plugin)};
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  if (g->plugin.api->Init(&g->ctx, 1, nullptr, QuietLogger, nullptr) != ncclSuccess ||
      g->plugin.api->Listen(g->ctx, 0, handle, &g->listen_comm) != ncclSuccess) {
    std::abort();
  }
  std::memcpy(&g->handle, handle, sizeof(g->handle));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    Peer(data, size);
  } else {
    Stranger(data + 1, size - 1);
  }
  return 0;
}
