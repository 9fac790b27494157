// Conformance of the exported tables, driven as NCCL's proxy thread drives
// them, across two processes on loopback: every exported version, directly
// and through the wrapper (TRIRACE_NET_INNER = a second build of the TCP
// transport).
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"

namespace net_test {
namespace {

struct Mode {
  int version;
  bool wrapped;
};

std::string ModeName(const testing::TestParamInfo<Mode>& info) {
  return std::string(info.param.wrapped ? "Wrapped" : "Tcp") + "V" + std::to_string(info.param.version);
}

class ConformanceTest : public testing::TestWithParam<Mode> {
 protected:
  Env MakeEnv(const std::string& tag) const {
    Env env = BaseEnv(tag);
    if (GetParam().wrapped) env.push_back({"TRIRACE_NET_INNER", InnerPluginPath()});
    return env;
  }
  // Runs `fn` in both ranks on a connected pair, then closes it.
  void RunPair(const std::string& tag, const std::function<void(int, Pair&, Channel&)>& fn) {
    auto codes = RunRanks(MakeEnv(tag), [&](int rank, Channel& peer, Channel&) {
      Pair pair = Pair::Connect(PluginPath(), GetParam().version, rank, peer);
      ASSERT_TRUE(pair.ok);
      fn(rank, pair, peer);
      EXPECT_TRUE(peer.Barrier());
      pair.Close();
    });
    ASSERT_EQ(codes.size(), 2u);
    EXPECT_EQ(codes[0], 0) << "rank 0 failed";
    EXPECT_EQ(codes[1], 0) << "rank 1 failed";
  }
};

void SendOne(NetPlugin& net, void* comm, void* data, size_t size, int tag) {
  void* mh = nullptr;
  ASSERT_EQ(net.RegMr(comm, data, size, NCCL_PTR_HOST, &mh), ncclSuccess);
  void* req = nullptr;
  while (req == nullptr) ASSERT_EQ(net.Isend(comm, data, size, tag, mh, &req), ncclSuccess);
  int sizes[1] = {-1};
  ASSERT_EQ(net.Wait(req, sizes), ncclSuccess);
  EXPECT_EQ(sizes[0], static_cast<int>(size));
  EXPECT_EQ(net.DeregMr(comm, mh), ncclSuccess);
}

// Receives into a buffer of `capacity`; returns the size reported.
int RecvOne(NetPlugin& net, void* comm, void* data, size_t capacity, int tag) {
  void* mh = nullptr;
  EXPECT_EQ(net.RegMr(comm, data, capacity, NCCL_PTR_HOST, &mh), ncclSuccess);
  void* req = nullptr;
  size_t size = capacity;
  while (req == nullptr) {
    if (net.Irecv(comm, 1, &data, &size, &tag, &mh, &req) != ncclSuccess) {
      ADD_FAILURE() << "irecv failed";
      return -1;
    }
  }
  int sizes[NCCL_NET_MAX_REQUESTS] = {-1};
  EXPECT_EQ(net.Wait(req, sizes), ncclSuccess);
  EXPECT_EQ(net.DeregMr(comm, mh), ncclSuccess);
  return sizes[0];
}

TEST_P(ConformanceTest, PropertiesDescribeAHostTransport) {
  RunPair("props", [&](int, Pair& p, Channel&) {
    ncclNetProperties_v11_t props;
    ASSERT_EQ(p.net->GetProperties(p.dev, &props), ncclSuccess);
    ASSERT_NE(props.name, nullptr);
    EXPECT_STREQ(props.name, "lo");
    EXPECT_EQ(props.ptrSupport, NCCL_PTR_HOST);
    EXPECT_GT(props.speed, 0);
    EXPECT_GT(props.maxComms, 0);
    EXPECT_GE(props.maxRecvs, 8);
    EXPECT_STREQ(p.net->name(), "TriRace");
    if (GetParam().version >= 9) {
      EXPECT_EQ(props.vProps.ndevs, 1);
      EXPECT_GT(props.maxP2pBytes, 0u);
    }
    if (GetParam().version == 11) { EXPECT_GE(props.maxMultiRequestSize, 1); }
  });
}

TEST_P(ConformanceTest, MovesEverySizeIntact) {
  const std::vector<size_t> sizes = {0, 1, 7, 4095, 4096, 65535, 65536, 1 << 20, 4 << 20, 64 << 20};
  RunPair("sizes", [&](int rank, Pair& p, Channel&) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<char> buf(std::max<size_t>(sizes[i], 1));
      if (rank == 1) {
        FillPattern(buf.data(), sizes[i], static_cast<uint32_t>(i));
        SendOne(*p.net, p.send_comm, buf.data(), sizes[i], 7);
      } else {
        EXPECT_EQ(RecvOne(*p.net, p.recv_comm, buf.data(), sizes[i], 7), static_cast<int>(sizes[i]));
        EXPECT_TRUE(CheckPattern(buf.data(), sizes[i], static_cast<uint32_t>(i))) << "size " << sizes[i];
      }
    }
  });
}

TEST_P(ConformanceTest, ThirtyTwoOutstandingThenBackpressure) {
  constexpr int kN = NCCL_NET_MAX_REQUESTS;
  RunPair("outstanding", [&](int rank, Pair& p, Channel&) {
    std::vector<std::vector<char>> bufs(kN);
    std::vector<void*> reqs(kN, nullptr);
    for (int i = 0; i < kN; ++i) {
      size_t size = (i % 4 == 3) ? (1 << 20) + i : 4096 + i;  // small and striped, interleaved
      bufs[i].resize(size);
      if (rank == 1) FillPattern(bufs[i].data(), size, i);
    }
    for (int i = 0; i < kN; ++i) {
      void* data = bufs[i].data();
      size_t size = bufs[i].size();
      int tag = i;
      if (rank == 1) {
        ASSERT_EQ(p.net->Isend(p.send_comm, data, size, tag, nullptr, &reqs[i]), ncclSuccess);
      } else {
        ASSERT_EQ(p.net->Irecv(p.recv_comm, 1, &data, &size, &tag, nullptr, &reqs[i]), ncclSuccess);
      }
      ASSERT_NE(reqs[i], nullptr) << "request " << i << " refused";
    }
    // One more than NCCL_NET_MAX_REQUESTS: "retry later".
    char extra[16];
    void* extra_data = extra;
    size_t extra_size = sizeof(extra);
    int extra_tag = 999;
    void* extra_req = reinterpret_cast<void*>(0xdead);
    if (rank == 1) {
      EXPECT_EQ(p.net->Isend(p.send_comm, extra, sizeof(extra), 999, nullptr, &extra_req), ncclSuccess);
    } else {
      EXPECT_EQ(p.net->Irecv(p.recv_comm, 1, &extra_data, &extra_size, &extra_tag, nullptr, &extra_req),
                ncclSuccess);
    }
    EXPECT_EQ(extra_req, nullptr);
    for (int i = 0; i < kN; ++i) {  // oldest first, as NCCL tests them
      int got[NCCL_NET_MAX_REQUESTS] = {};
      ASSERT_EQ(p.net->Wait(reqs[i], got), ncclSuccess);
      EXPECT_EQ(got[0], static_cast<int>(bufs[i].size()));
      if (rank == 0) { EXPECT_TRUE(CheckPattern(bufs[i].data(), bufs[i].size(), i)) << "message " << i; }
    }
  });
}

TEST_P(ConformanceTest, GroupedReceiveMatchesTags) {
  constexpr int kN = 8;
  const int send_order[kN] = {5, 2, 7, 0, 3, 6, 1, 4};
  RunPair("multirecv", [&](int rank, Pair& p, Channel&) {
    // Odd tags: striped over the data sockets; even: inline.
    auto size_of = [](int tag) -> size_t { return tag % 2 ? 300000 + tag : 3000 + tag; };
    if (rank == 1) {
      for (int tag : send_order) {
        std::vector<char> buf(size_of(tag));
        FillPattern(buf.data(), buf.size(), tag);
        SendOne(*p.net, p.send_comm, buf.data(), buf.size(), tag);
      }
      return;
    }
    std::vector<std::vector<char>> bufs(kN, std::vector<char>(400000));
    void* data[kN];
    size_t sizes[kN];
    int tags[kN];
    for (int i = 0; i < kN; ++i) {
      data[i] = bufs[i].data();
      sizes[i] = bufs[i].size();
      tags[i] = i;
    }
    void* req = nullptr;
    while (req == nullptr) ASSERT_EQ(p.net->Irecv(p.recv_comm, kN, data, sizes, tags, nullptr, &req), ncclSuccess);
    int got[NCCL_NET_MAX_REQUESTS] = {};
    ASSERT_EQ(p.net->Wait(req, got), ncclSuccess);
    for (int i = 0; i < kN; ++i) {
      EXPECT_EQ(got[i], static_cast<int>(size_of(i))) << "buffer with tag " << i;
      EXPECT_TRUE(CheckPattern(bufs[i].data(), size_of(i), i)) << "buffer with tag " << i;
    }
  });
}

TEST_P(ConformanceTest, ReceiveLargerThanSendReportsRealSize) {
  const std::vector<size_t> sizes = {0, 1000, 300000};
  RunPair("larger", [&](int rank, Pair& p, Channel&) {
    std::vector<char> buf(1 << 20);
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (rank == 1) {
        FillPattern(buf.data(), sizes[i], i);
        SendOne(*p.net, p.send_comm, buf.data(), sizes[i], 1);
      } else {
        EXPECT_EQ(RecvOne(*p.net, p.recv_comm, buf.data(), buf.size(), 1), static_cast<int>(sizes[i]));
        EXPECT_TRUE(CheckPattern(buf.data(), sizes[i], i));
      }
    }
  });
}

TEST_P(ConformanceTest, OptionalRecvCompletionAndFlush) {
  RunPair("optional", [&](int rank, Pair& p, Channel&) {
    std::vector<char> buf(4096);
    if (rank == 1) {
      FillPattern(buf.data(), buf.size(), 3);
      SendOne(*p.net, p.send_comm, buf.data(), buf.size(), 0);
      return;
    }
    void* data = buf.data();
    size_t size = buf.size();
    int tag = 0;
    void* req = reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION);
    ASSERT_EQ(p.net->Irecv(p.recv_comm, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
    ASSERT_NE(req, nullptr);
    ASSERT_NE(req, reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION));
    ASSERT_EQ(p.net->Wait(req), ncclSuccess);
    EXPECT_TRUE(CheckPattern(buf.data(), buf.size(), 3));
    int flush_size = static_cast<int>(size);
    void* flush_req = nullptr;
    ASSERT_EQ(p.net->Iflush(p.recv_comm, 1, &data, &flush_size, nullptr, &flush_req), ncclSuccess);
    if (flush_req != nullptr) { EXPECT_EQ(p.net->Wait(flush_req), ncclSuccess); }
  });
}

TEST_P(ConformanceTest, CloseInEveryState) {
  auto codes = RunRanks(MakeEnv("close"), [&](int rank, Channel& peer, Channel&) {
    auto net = NetPlugin::Load(PluginPath(), GetParam().version);
    ASSERT_NE(net, nullptr);
    ASSERT_EQ(net->Init(), ncclSuccess);
    const std::vector<std::string> base_sockets = OpenSockets();
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    // A listener closed before anything connected.
    void* lonely = nullptr;
    ASSERT_EQ(net->Listen(0, handle, &lonely), ncclSuccess);
    ASSERT_EQ(net->CloseListen(lonely), ncclSuccess);
    // Comms closed with requests outstanding on both sides.
    std::vector<char> big(8 << 20);
    if (rank == 0) {
      void* lc = nullptr;
      void* rc = nullptr;
      ASSERT_EQ(net->Listen(0, handle, &lc), ncclSuccess);
      ASSERT_TRUE(peer.Send(handle, sizeof(handle)));
      ASSERT_EQ(net->AcceptLoop(lc, &rc), ncclSuccess);
      ASSERT_EQ(net->CloseListen(lc), ncclSuccess);  // listener closed, comm stays usable
      void* data = big.data();
      size_t size = 1024;
      int tag = 0;
      void* req = nullptr;
      ASSERT_EQ(net->Irecv(rc, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
      ASSERT_TRUE(peer.Barrier());  // the sender posted a large send and closed
      // Our receive may or may not have matched before the sender closed;
      // either way closing with whatever is outstanding must succeed.
      ASSERT_TRUE(peer.Barrier());
      EXPECT_EQ(net->CloseRecv(rc), ncclSuccess);
    } else {
      ASSERT_TRUE(peer.Recv(handle, sizeof(handle)));
      void* sc = nullptr;
      ASSERT_EQ(net->ConnectLoop(0, handle, &sc), ncclSuccess);
      void* req = nullptr;
      while (req == nullptr) ASSERT_EQ(net->Isend(sc, big.data(), big.size(), 5, nullptr, &req), ncclSuccess);
      EXPECT_EQ(net->CloseSend(sc), ncclSuccess);  // with the 8 MiB send outstanding
      ASSERT_TRUE(peer.Barrier());
      ASSERT_TRUE(peer.Barrier());
    }
    EXPECT_EQ(OpenSockets(), base_sockets) << "sockets leaked by closed comms";
    EXPECT_EQ(net->Finalize(), ncclSuccess);
  });
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
}

INSTANTIATE_TEST_SUITE_P(NetPlugin, ConformanceTest,
                         testing::Values(Mode{11, false}, Mode{10, false}, Mode{9, false}, Mode{8, false},
                                         Mode{11, true}, Mode{10, true}, Mode{9, true}),
                         ModeName);

}  // namespace
}  // namespace net_test
