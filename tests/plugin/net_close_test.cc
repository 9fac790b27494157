// Closing a send comm right after its last isend completed: an isend being
// done only means the buffer may be reused, so the bytes already handed to
// the kernel must still reach the receiver intact, and the receiver must
// complete every message whose bytes arrived before it treats the close as
// an error. Two processes on loopback, a fresh comm pair per round.
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"

namespace net_test {
namespace {

// Striped (>= 256 KiB), inline on the control socket, embedded in the
// header, empty: every path a message can take. The total stays well below
// what loopback buffers hold, so the sends complete before any receive is
// posted.
const std::vector<size_t> kSizes = {1 << 20, 300001, 100000, 33, 0, (2 << 20) + 1, 4096, 1 << 20};
constexpr int kRounds = 8;

// Rank 0 listens and receives, rank 1 connects and sends.
void ConnectRound(NetPlugin& net, int rank, Channel& peer, void** comm) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  *comm = nullptr;
  if (rank == 0) {
    void* lc = nullptr;
    ASSERT_EQ(net.Listen(0, handle, &lc), ncclSuccess);
    ASSERT_TRUE(peer.Send(handle, sizeof(handle)));
    ASSERT_EQ(net.AcceptLoop(lc, comm), ncclSuccess);
    ASSERT_EQ(net.CloseListen(lc), ncclSuccess);
  } else {
    ASSERT_TRUE(peer.Recv(handle, sizeof(handle)));
    ASSERT_EQ(net.ConnectLoop(0, handle, comm), ncclSuccess);
  }
}

// Sends every message, waits until each is done, runs `before_close`,
// closes at once.
void SendAndClose(NetPlugin& net, void* sc, std::vector<std::vector<char>>& bufs, int round,
                  const std::function<void()>& before_close = nullptr) {
  std::vector<void*> reqs(bufs.size(), nullptr);
  for (size_t i = 0; i < bufs.size(); ++i) {
    FillPattern(bufs[i].data(), bufs[i].size(), static_cast<uint32_t>(round * 100 + i));
    while (reqs[i] == nullptr) {
      ASSERT_EQ(net.Isend(sc, bufs[i].data(), bufs[i].size(), static_cast<int>(i), nullptr, &reqs[i]),
                ncclSuccess);
    }
  }
  for (void* req : reqs) ASSERT_EQ(net.Wait(req, nullptr, 30000), ncclSuccess);
  if (before_close) before_close();
  ASSERT_EQ(net.CloseSend(sc), ncclSuccess);
}

// Posts a receive per message (buffers one byte larger than the message),
// waits for all of them and checks every byte.
void ReceiveAll(NetPlugin& net, void* rc, std::vector<std::vector<char>>& bufs, int round) {
  std::vector<void*> reqs(bufs.size(), nullptr);
  for (size_t i = 0; i < bufs.size(); ++i) {
    void* data = bufs[i].data();
    size_t size = bufs[i].size();
    int tag = static_cast<int>(i);
    while (reqs[i] == nullptr) {
      ASSERT_EQ(net.Irecv(rc, 1, &data, &size, &tag, nullptr, &reqs[i]), ncclSuccess);
    }
  }
  for (size_t i = 0; i < bufs.size(); ++i) {
    int sizes[NCCL_NET_MAX_REQUESTS] = {-1};
    ASSERT_EQ(net.Wait(reqs[i], sizes, 30000), ncclSuccess) << "round " << round << " message " << i;
    ASSERT_EQ(sizes[0], static_cast<int>(kSizes[i])) << "round " << round << " message " << i;
    EXPECT_TRUE(CheckPattern(bufs[i].data(), kSizes[i], static_cast<uint32_t>(round * 100 + i)))
        << "round " << round << " message " << i << " corrupted";
  }
}

// The receiver posts its receives only once every send is done and the
// sender is closing the comm: all it gets is read after the close began.
TEST(NetPluginCloseDrain, ReceivesPostedAfterTheSenderClosedGetEveryByte) {
  auto codes = RunRanks(BaseEnv("drainlate"), [](int rank, Channel& peer, Channel&) {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    std::vector<std::vector<char>> bufs;
    for (size_t s : kSizes) bufs.emplace_back(rank == 0 ? s + 1 : s);
    for (int round = 0; round < kRounds; ++round) {
      void* comm = nullptr;
      ConnectRound(*net, rank, peer, &comm);
      ASSERT_NE(comm, nullptr);
      if (rank == 1) {
        SendAndClose(*net, comm, bufs, round, [&] { ASSERT_TRUE(peer.SendU64(round + 1)); });
      } else {
        ASSERT_EQ(peer.RecvU64(), static_cast<uint64_t>(round + 1));
        ReceiveAll(*net, comm, bufs, round);
        ASSERT_EQ(net->CloseRecv(comm), ncclSuccess);
      }
      ASSERT_TRUE(peer.Barrier());
    }
    EXPECT_EQ(net->Finalize(), ncclSuccess);
  });
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 0) << "the receiver lost or corrupted data";
  EXPECT_EQ(codes[1], 0) << "the sender failed";
}

// The receiver posts first and keeps testing while the sender finishes and
// closes: the close races with bytes still in flight.
TEST(NetPluginCloseDrain, CloseRacingTheReceiverLosesNothing) {
  auto codes = RunRanks(BaseEnv("drainrace"), [](int rank, Channel& peer, Channel&) {
    auto net = NetPlugin::Load(PluginPath(), 11);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    std::vector<std::vector<char>> bufs;
    for (size_t s : kSizes) bufs.emplace_back(rank == 0 ? s + 1 : s);
    for (int round = 0; round < kRounds; ++round) {
      void* comm = nullptr;
      ConnectRound(*net, rank, peer, &comm);
      ASSERT_NE(comm, nullptr);
      if (rank == 1) {
        SendAndClose(*net, comm, bufs, round);
      } else {
        ReceiveAll(*net, comm, bufs, round);
        ASSERT_EQ(net->CloseRecv(comm), ncclSuccess);
      }
      ASSERT_TRUE(peer.Barrier());
    }
    EXPECT_EQ(net->Finalize(), ncclSuccess);
  });
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 0) << "the receiver lost or corrupted data";
  EXPECT_EQ(codes[1], 0) << "the sender failed";
}

// An EOF after complete frames fails only a receive whose message never
// came: the receiver posts one receive more than the sender sends, and
// every real message still arrives intact.
TEST(NetPluginCloseDrain, EofFailsOnlyTheReceiveWhoseMessageNeverCame) {
  auto codes = RunRanks(BaseEnv("draineof"), [](int rank, Channel& peer, Channel&) {
    Pair p = Pair::Connect(PluginPath(), 11, rank, peer);
    ASSERT_TRUE(p.ok);
    std::vector<std::vector<char>> bufs;
    for (size_t s : kSizes) bufs.emplace_back(rank == 0 ? s + 1 : s);
    if (rank == 1) {
      SendAndClose(*p.net, p.send_comm, bufs, 0, [&] { ASSERT_TRUE(peer.SendU64(1)); });
      p.send_comm = nullptr;
    } else {
      ASSERT_EQ(peer.RecvU64(), 1u);
      char extra_buf[16];
      void* data = extra_buf;
      size_t size = sizeof(extra_buf);
      int tag = 99;
      void* extra = nullptr;
      ASSERT_EQ(p.net->Irecv(p.recv_comm, 1, &data, &size, &tag, nullptr, &extra), ncclSuccess);
      ASSERT_NE(extra, nullptr);
      ReceiveAll(*p.net, p.recv_comm, bufs, 0);
      EXPECT_EQ(p.net->Wait(extra, nullptr, 30000), ncclRemoteError) << "a receive that can never match";
    }
    EXPECT_TRUE(peer.Barrier());
    p.Close();
  });
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 0) << "the receiver lost data";
  EXPECT_EQ(codes[1], 0) << "the sender failed";
}

}  // namespace
}  // namespace net_test
