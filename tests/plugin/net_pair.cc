#include "plugin/net_pair.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "gtest/gtest.h"

namespace net_test {

Env BaseEnv(const std::string& tag) {
  return {{"TRIRACE_NET_IFNAME", "lo"}, {"TRIRACE_JOB_ID", UniqueJobId(tag)},
          {"TRIRACE_NET_TIMEOUT_MS", "5000"}};
}

void ExpectRanksPassed(const std::vector<int>& codes, int rank1_expected) {
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], 0) << "rank 0 failed";
  EXPECT_EQ(codes[1], rank1_expected) << "rank 1 ended unexpectedly";
}

bool Pair::MoveOne(int rank, void* data, size_t bytes) {
  void* req = nullptr;
  size_t size = bytes;
  int tag = 0;
  while (req == nullptr) {
    ncclResult_t rc = rank == 1 ? net->Isend(send_comm, data, bytes, 0, nullptr, &req)
                                : net->Irecv(recv_comm, 1, &data, &size, &tag, nullptr, &req);
    EXPECT_EQ(rc, ncclSuccess) << (rank == 1 ? "isend" : "irecv");
    if (rc != ncclSuccess) return false;
  }
  ncclResult_t rc = net->Wait(req);
  EXPECT_EQ(rc, ncclSuccess) << "waiting for the request";
  return rc == ncclSuccess;
}

std::vector<int> TcpSocketOptionValues(int level, int name) {
  std::vector<int> values;
  for (int fd = 0; fd < 1024; ++fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int type = 0;
    socklen_t tlen = sizeof(type);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.ss_family != AF_INET ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM) {
      continue;
    }
    int v = -1;
    socklen_t vlen = sizeof(v);
    if (getsockopt(fd, level, name, &v, &vlen) == 0) values.push_back(v);
  }
  return values;
}

Pair Pair::Connect(const std::string& path, int version, int rank, Channel& peer,
                   int traffic_class) {
  Pair p;
  p.net = NetPlugin::Load(path, version);
  if (p.net == nullptr) return p;
  EXPECT_EQ(p.net->Init(1, traffic_class), ncclSuccess);
  int ndev = 0;
  EXPECT_EQ(p.net->Devices(&ndev), ncclSuccess);
  EXPECT_GE(ndev, 1);
  if (ndev < 1) return p;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  if (rank == 0) {
    EXPECT_EQ(p.net->Listen(p.dev, handle, &p.listen_comm), ncclSuccess);
    EXPECT_TRUE(peer.Send(handle, sizeof(handle)));
    EXPECT_EQ(p.net->AcceptLoop(p.listen_comm, &p.recv_comm), ncclSuccess);
    p.ok = p.recv_comm != nullptr;
  } else {
    EXPECT_TRUE(peer.Recv(handle, sizeof(handle)));
    EXPECT_EQ(p.net->ConnectLoop(p.dev, handle, &p.send_comm), ncclSuccess);
    p.ok = p.send_comm != nullptr;
  }
  return p;
}

void Pair::Close() {
  if (send_comm) {
    EXPECT_EQ(net->CloseSend(send_comm), ncclSuccess);
  }
  if (recv_comm) {
    EXPECT_EQ(net->CloseRecv(recv_comm), ncclSuccess);
  }
  if (listen_comm) {
    EXPECT_EQ(net->CloseListen(listen_comm), ncclSuccess);
  }
  send_comm = recv_comm = listen_comm = nullptr;
}

}  // namespace net_test
