// Bad input and failures: each gives the documented error, never a hang,
// a crash or a leaked descriptor. Every address used is loopback.
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"
#include "plugin/transport/tcp/wire.h"

namespace net_test {
namespace {

namespace tcp = trirace::net::tcp;

TEST(NetPluginBadInput, GarbageHandleIsRejectedBeforeAnyConnect) {
  int code = RunInChild(BaseEnv("garbage"), [] {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    const std::vector<std::string> sockets = OpenSockets();
    std::mt19937 rng(7);
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    for (char& c : handle) c = static_cast<char>(rng());
    void* sc = reinterpret_cast<void*>(1);
    EXPECT_EQ(net->Connect(0, handle, &sc), ncclInvalidArgument);
    EXPECT_EQ(sc, nullptr);
    // A real handle with one byte of its address flipped fails the checksum.
    void* lc = nullptr;
    ASSERT_EQ(net->Listen(0, handle, &lc), ncclSuccess);
    char tampered[NCCL_NET_HANDLE_MAXSIZE];
    std::memcpy(tampered, handle, sizeof(handle));
    tampered[offsetof(tcp::ConnectHandle, addr) + 4] ^= 0x01;
    EXPECT_EQ(net->Connect(0, tampered, &sc), ncclInvalidArgument);
    std::memset(tampered, 0, sizeof(tampered));
    EXPECT_EQ(net->Connect(0, tampered, &sc), ncclInvalidArgument);
    EXPECT_EQ(net->CloseListen(lc), ncclSuccess);
    EXPECT_EQ(OpenSockets(), sockets) << "a socket was made for a garbage handle";
  });
  EXPECT_EQ(code, 0);
}

// Connects a raw socket to the listener in `handle` and sends `bytes`.
int RawConnect(const char* handle, const void* bytes, size_t len) {
  tcp::ConnectHandle h;
  std::memcpy(&h, handle, sizeof(h));
  EXPECT_TRUE(h.addr.IsLoopback());
  int fd = socket(h.addr.u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(connect(fd, &h.addr.u.sa, h.addr.length()), 0);
  EXPECT_EQ(send(fd, bytes, len, MSG_NOSIGNAL), static_cast<ssize_t>(len));
  return fd;
}

// True once the listener closed the raw connection (EOF), polling accept,
// within 10 s (the handshake and the close cross loopback through the
// kernel's deferred network work, which a loaded machine runs late).
bool ClosedByListener(NetPlugin& net, void* lc, int fd) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    pollfd wait{.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
    poll(&wait, 1, 1);
    void* rc = nullptr;
    EXPECT_EQ(net.Accept(lc, &rc), ncclSuccess);
    EXPECT_EQ(rc, nullptr) << "a stray connection was accepted";
    char c;
    ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno == ECONNRESET)) return true;
  }
  return false;
}

TEST(NetPluginBadInput, StrayConnectionsAreClosedNotAccepted) {
  auto codes = RunRanks(BaseEnv("stray"), [](int rank, Channel& peer, Channel&) {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    if (rank == 0) {
      void* lc = nullptr;
      ASSERT_EQ(net->Listen(0, handle, &lc), ncclSuccess);
      tcp::ConnectHandle h;
      std::memcpy(&h, handle, sizeof(h));
      // 1: garbage instead of a hello.
      char junk[sizeof(tcp::Hello)];
      std::memset(junk, 'x', sizeof(junk));
      int fd1 = RawConnect(handle, junk, sizeof(junk));
      EXPECT_TRUE(ClosedByListener(*net, lc, fd1)) << "wrong magic";
      close(fd1);
      // 2: a well-formed hello with the wrong token.
      tcp::Hello hello{tcp::kHelloMagic, tcp::kWireVersion, 0, 1, 0, 0, h.token ^ 1, h.listener_id, 42};
      hello.checksum = tcp::HelloChecksum(hello);
      int fd2 = RawConnect(handle, &hello, sizeof(hello));
      EXPECT_TRUE(ClosedByListener(*net, lc, fd2)) << "wrong token";
      close(fd2);
      // The listener still takes a real connection.
      ASSERT_TRUE(peer.Send(handle, sizeof(handle)));
      void* rc = nullptr;
      ASSERT_EQ(net->AcceptLoop(lc, &rc), ncclSuccess);
      char buf[64];
      void* data = buf;
      size_t size = sizeof(buf);
      int tag = 1;
      void* req = nullptr;
      ASSERT_EQ(net->Irecv(rc, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
      int got[NCCL_NET_MAX_REQUESTS] = {};
      ASSERT_EQ(net->Wait(req, got), ncclSuccess);
      EXPECT_EQ(got[0], 5);
      EXPECT_EQ(std::string(buf, 5), "hello");
      EXPECT_EQ(net->CloseRecv(rc), ncclSuccess);
      EXPECT_EQ(net->CloseListen(lc), ncclSuccess);
    } else {
      ASSERT_TRUE(peer.Recv(handle, sizeof(handle)));
      void* sc = nullptr;
      ASSERT_EQ(net->ConnectLoop(0, handle, &sc), ncclSuccess);
      char msg[] = "hello";
      void* req = nullptr;
      while (req == nullptr) ASSERT_EQ(net->Isend(sc, msg, 5, 1, nullptr, &req), ncclSuccess);
      ASSERT_EQ(net->Wait(req), ncclSuccess);
      EXPECT_EQ(net->CloseSend(sc), ncclSuccess);
    }
  });
  ExpectRanksPassed(codes);
}

TEST(NetPluginBadInput, HandleFromAnotherJobTokenIsRefused) {
  Env env = BaseEnv("token");
  auto codes = RunRanks(env, [](int rank, Channel& peer, Channel&) {
    setenv("TRIRACE_NET_TOKEN", rank == 0 ? "job-a" : "job-b", 1);
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    if (rank == 0) {
      void* lc = nullptr;
      ASSERT_EQ(net->Listen(0, handle, &lc), ncclSuccess);
      ASSERT_TRUE(peer.Send(handle, sizeof(handle)));
      ASSERT_TRUE(peer.Barrier());
      void* rc = nullptr;
      EXPECT_EQ(net->Accept(lc, &rc), ncclSuccess);
      EXPECT_EQ(rc, nullptr);
      EXPECT_EQ(net->CloseListen(lc), ncclSuccess);
    } else {
      ASSERT_TRUE(peer.Recv(handle, sizeof(handle)));
      void* sc = nullptr;
      EXPECT_EQ(net->Connect(0, handle, &sc), ncclInvalidArgument);
      EXPECT_EQ(sc, nullptr);
      ASSERT_TRUE(peer.Barrier());
    }
  });
  ExpectRanksPassed(codes);
}

TEST(NetPluginBadInput, MessageLargerThanReceiveFailsBothSides) {
  auto codes = RunRanks(BaseEnv("truncate"), [](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer);
    ASSERT_TRUE(p.ok);
    std::vector<char> buf(1 << 20);
    if (rank == 0) {
      void* data = buf.data();
      size_t size = 1000;  // smaller than the 4096 bytes sent
      int tag = 3;
      void* req = nullptr;
      ASSERT_EQ(p.net->Irecv(p.recv_comm, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
      EXPECT_EQ(p.net->Wait(req), ncclInvalidUsage);
      for (char c : std::vector<char>(buf.begin() + 1000, buf.begin() + 4096)) {
        ASSERT_EQ(c, 0) << "bytes written past the posted receive";
      }
    } else {
      void* req = nullptr;
      while (req == nullptr) ASSERT_EQ(p.net->Isend(p.send_comm, buf.data(), 4096, 3, nullptr, &req), ncclSuccess);
      ncclResult_t r = p.net->Wait(req);  // may already have left
      // The sender learns of the rejection on this request or a later one.
      for (int i = 0; i < 100000 && r == ncclSuccess; ++i) {
        req = nullptr;
        r = p.net->Isend(p.send_comm, buf.data(), 8, 3, nullptr, &req);
        if (r == ncclSuccess && req != nullptr) r = p.net->Wait(req);
      }
      EXPECT_EQ(r, ncclInvalidUsage);
    }
    EXPECT_TRUE(peer.Barrier());
    p.Close();
  });
  ExpectRanksPassed(codes);
}

TEST(NetPluginBadInput, SenderKilledMidMessageGivesRemoteError) {
  Env env = BaseEnv("killsend");
  env.push_back({"TRIRACE_NET_TIMEOUT_MS", "3000"});
  auto codes = RunRanks(env, [](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer);
    ASSERT_TRUE(p.ok);
    std::vector<char> buf(64 << 20);
    if (rank == 0) {
      void* data = buf.data();
      size_t size = buf.size();
      int tag = 0;
      void* req = nullptr;
      ASSERT_EQ(p.net->Irecv(p.recv_comm, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
      ASSERT_TRUE(peer.Barrier());
      EXPECT_EQ(p.net->Wait(req, nullptr, 60000), ncclRemoteError);
      p.Close();
    } else {
      ASSERT_TRUE(peer.Barrier());
      void* req = nullptr;
      while (req == nullptr) ASSERT_EQ(p.net->Isend(p.send_comm, buf.data(), buf.size(), 0, nullptr, &req), ncclSuccess);
      int done = 0;
      (void)p.net->Test(req, &done, nullptr);
      raise(SIGKILL);
    }
  });
  ExpectRanksPassed(codes, 128 + SIGKILL);
}

TEST(NetPluginBadInput, ReceiverKilledGivesSenderRemoteError) {
  auto codes = RunRanks(BaseEnv("killrecv"), [](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer);
    ASSERT_TRUE(p.ok);
    if (rank == 0) {
      ASSERT_TRUE(peer.Barrier());
      raise(SIGKILL);
    }
    ASSERT_TRUE(peer.Barrier());
    std::vector<char> buf(64 << 20);
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < 100 && r == ncclSuccess; ++i) {
      void* req = nullptr;
      r = p.net->Isend(p.send_comm, buf.data(), buf.size(), 0, nullptr, &req);
      if (r == ncclSuccess && req != nullptr) r = p.net->Wait(req, nullptr, 60000);
    }
    EXPECT_EQ(r, ncclRemoteError);
    p.Close();
  });
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 128 + SIGKILL);
  EXPECT_EQ(codes[1], 0);
}

TEST(NetPluginBadInput, CallsOnClosedCommsAndFinishedRequests) {
  auto codes = RunRanks(BaseEnv("closed"), [](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer);
    ASSERT_TRUE(p.ok);
    char buf[16] = "0123456789";
    void* data = buf;
    size_t size = sizeof(buf);
    int tag = 0;
    void* req = nullptr;
    if (rank == 0) {
      ASSERT_EQ(p.net->Irecv(p.recv_comm, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
      ASSERT_EQ(p.net->Wait(req), ncclSuccess);
      int done = 0;
      EXPECT_EQ(p.net->Test(req, &done, nullptr), ncclInvalidArgument) << "finished request";
      void* rc = p.recv_comm;
      void* lc = p.listen_comm;
      p.Close();
      EXPECT_EQ(p.net->Irecv(rc, 1, &data, &size, &tag, nullptr, &req), ncclInvalidArgument);
      EXPECT_EQ(p.net->CloseRecv(rc), ncclInvalidArgument);
      EXPECT_EQ(p.net->CloseListen(lc), ncclInvalidArgument);
      void* junk = nullptr;
      EXPECT_EQ(p.net->Accept(lc, &junk), ncclInvalidArgument);
    } else {
      while (req == nullptr) ASSERT_EQ(p.net->Isend(p.send_comm, buf, sizeof(buf), 0, nullptr, &req), ncclSuccess);
      ASSERT_EQ(p.net->Wait(req), ncclSuccess);
      void* sc = p.send_comm;
      EXPECT_EQ(p.net->CloseRecv(sc), ncclInvalidArgument) << "a send comm closed as a receive comm";
      p.Close();
      EXPECT_EQ(p.net->Isend(sc, buf, sizeof(buf), 0, nullptr, &req), ncclInvalidArgument);
      EXPECT_EQ(p.net->CloseSend(sc), ncclInvalidArgument);
      int done = 0;
      EXPECT_EQ(p.net->Test(reinterpret_cast<void*>(0x1234), &done, nullptr), ncclInvalidArgument);
    }
    EXPECT_TRUE(peer.Barrier());
  });
  ExpectRanksPassed(codes);
}

TEST(NetPluginBadInput, InvalidDeviceAndArguments) {
  int code = RunInChild(BaseEnv("args"), [] {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    int ndev = 0;
    ASSERT_EQ(net->Devices(&ndev), ncclSuccess);
    ncclNetProperties_v11_t props;
    EXPECT_EQ(net->GetProperties(ndev, &props), ncclInvalidArgument);
    EXPECT_EQ(net->GetProperties(-1, &props), ncclInvalidArgument);
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    void* lc = nullptr;
    EXPECT_EQ(net->Listen(ndev, handle, &lc), ncclInvalidArgument);
    EXPECT_EQ(net->Listen(-1, handle, &lc), ncclInvalidArgument);
    void* sc = nullptr;
    EXPECT_EQ(net->Connect(ndev, handle, &sc), ncclInvalidArgument);
    EXPECT_EQ(net->Devices(nullptr), ncclInvalidArgument);
    // Arguments on a real comm pair inside one process.
    ASSERT_EQ(net->Listen(0, handle, &lc), ncclSuccess);
    void* rc = nullptr;
    while (sc == nullptr || rc == nullptr) {
      if (sc == nullptr) { ASSERT_EQ(net->Connect(0, handle, &sc), ncclSuccess); }
      if (rc == nullptr) { ASSERT_EQ(net->Accept(lc, &rc), ncclSuccess); }
    }
    char buf[8];
    void* mh = nullptr;
    EXPECT_EQ(net->RegMr(sc, buf, sizeof(buf), NCCL_PTR_CUDA, &mh), ncclInvalidArgument);
    void* req = nullptr;
    EXPECT_EQ(net->Isend(sc, nullptr, 100, 0, nullptr, &req), ncclInvalidArgument);
    void* data[9] = {buf, buf, buf, buf, buf, buf, buf, buf, buf};
    size_t sizes[9] = {8, 8, 8, 8, 8, 8, 8, 8, 8};
    int tags[9] = {};
    EXPECT_EQ(net->Irecv(rc, 0, data, sizes, tags, nullptr, &req), ncclInvalidArgument);
    EXPECT_EQ(net->Irecv(rc, 9, data, sizes, tags, nullptr, &req), ncclInvalidArgument);
    EXPECT_EQ(net->Isend(rc, buf, 8, 0, nullptr, &req), ncclInvalidArgument) << "isend on a recv comm";
    EXPECT_EQ(net->CloseSend(sc), ncclSuccess);
    EXPECT_EQ(net->CloseRecv(rc), ncclSuccess);
    EXPECT_EQ(net->CloseListen(lc), ncclSuccess);
    EXPECT_EQ(net->Finalize(), ncclSuccess);
    EXPECT_EQ(net->Finalize(), ncclInvalidArgument) << "finalize of a finalized context";
    EXPECT_EQ(net->Listen(0, handle, &lc), ncclInvalidArgument) << "listen on a finalized context";
  });
  EXPECT_EQ(code, 0);
}

std::vector<std::string>* g_logged = nullptr;

void RecordingLogger(ncclDebugLogLevel level, unsigned long flags, const char*, int, const char* fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  g_logged->push_back(std::to_string(level) + " " + std::to_string(flags) + " " + line);
}

TEST(NetPluginBadInput, ErrorsAreLoggedThroughNcclsLogger) {
  int code = RunInChild(BaseEnv("logger"), [] {
    std::vector<std::string> lines;
    g_logged = &lines;
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(1, -1, RecordingLogger), ncclSuccess);
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    void* sc = nullptr;
    EXPECT_EQ(net->Connect(0, handle, &sc), ncclInvalidArgument);
    bool found = false;
    for (const std::string& l : lines) {
      if (l.rfind(std::to_string(NCCL_LOG_WARN) + " ", 0) == 0 && l.find("TriRace connect:") != std::string::npos &&
          l.find("not a TriRace TCP handle") != std::string::npos) {
        found = true;
      }
    }
    EXPECT_TRUE(found) << "no WARN line about the bad handle reached NCCL's logger";
  });
  EXPECT_EQ(code, 0);
}

TEST(NetPluginTrafficClassTest, InitConfigSetsTosOnEverySocketOfTheComm) {
  auto codes = RunRanks(BaseEnv("tos"), [](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer, /*traffic_class=*/184);  // DSCP EF
    ASSERT_TRUE(p.ok);
    std::vector<int> tos = TcpSocketOptionValues(IPPROTO_IP, IP_TOS);
    int marked = 0;
    for (int v : tos) marked += v == 184;
    // Connected comms have 1 control + 4 data sockets (TRIRACE_NET_NSOCKS auto on loopback).
    EXPECT_EQ(marked, 5) << "rank " << rank << ": sockets with TOS 184 among " << tos.size();
    EXPECT_TRUE(peer.Barrier());
    p.Close();
  });
  ExpectRanksPassed(codes);
}

TEST(NetPluginBadInput, VirtualDevices) {
  int code = RunInChild(BaseEnv("vdev"), [] {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    int ndev = 0;
    ASSERT_EQ(net->Devices(&ndev), ncclSuccess);
    ncclNetVDeviceProps_v11_t bad{};
    bad.ndevs = 1;
    bad.devs[0] = ndev;  // not a device
    int vdev = -1;
    EXPECT_EQ(net->MakeVDevice(&vdev, &bad), ncclInvalidArgument);
    bad.ndevs = 0;
    EXPECT_EQ(net->MakeVDevice(&vdev, &bad), ncclInvalidArgument);
    ncclNetVDeviceProps_v11_t good{};
    good.ndevs = 1;
    good.devs[0] = 0;
    ASSERT_EQ(net->MakeVDevice(&vdev, &good), ncclSuccess);
    EXPECT_EQ(vdev, ndev);
    int now = 0;
    ASSERT_EQ(net->Devices(&now), ncclSuccess);
    EXPECT_EQ(now, ndev + 1);
    ncclNetProperties_v11_t props;
    ASSERT_EQ(net->GetProperties(vdev, &props), ncclSuccess);
    EXPECT_STREQ(props.name, "lo");
    EXPECT_EQ(props.vProps.ndevs, 1);
    EXPECT_EQ(props.vProps.devs[0], 0);
    // The virtual device carries traffic like its member.
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    void* lc = nullptr;
    void* sc = nullptr;
    void* rc = nullptr;
    ASSERT_EQ(net->Listen(vdev, handle, &lc), ncclSuccess);
    while (sc == nullptr || rc == nullptr) {
      if (sc == nullptr) { ASSERT_EQ(net->Connect(vdev, handle, &sc), ncclSuccess); }
      if (rc == nullptr) { ASSERT_EQ(net->Accept(lc, &rc), ncclSuccess); }
    }
    EXPECT_EQ(net->CloseSend(sc), ncclSuccess);
    EXPECT_EQ(net->CloseRecv(rc), ncclSuccess);
    EXPECT_EQ(net->CloseListen(lc), ncclSuccess);
  });
  EXPECT_EQ(code, 0);
}

TEST(NetPluginBadInput, UninitialisedAndMissingInnerPlugin) {
  int code = RunInChild(BaseEnv("noinit"), [] {
    auto net = NetPlugin::Load(PluginPath(), 10);
    ASSERT_NE(net, nullptr);
    int ndev = 0;
    EXPECT_NE(net->Devices(&ndev), ncclSuccess) << "devices before init";
  });
  EXPECT_EQ(code, 0);
  Env env = BaseEnv("noinner");
  env.push_back({"TRIRACE_NET_INNER", "/nonexistent/libnccl-net-nothing.so"});
  code = RunInChild(env, [] {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    EXPECT_EQ(net->Init(), ncclInvalidUsage);
  });
  EXPECT_EQ(code, 0);
  env = BaseEnv("self");
  env.push_back({"TRIRACE_NET_INNER", PluginPath()});
  code = RunInChild(env, [] {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    EXPECT_EQ(net->Init(), ncclInvalidArgument) << "wrapping itself";
  });
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace net_test
