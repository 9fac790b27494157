#include "plugin/net_pair.h"

#include "gtest/gtest.h"

namespace net_test {

Env BaseEnv(const std::string& tag) {
  return {{"TRIRACE_NET_IFNAME", "lo"}, {"TRIRACE_JOB_ID", UniqueJobId(tag)},
          {"TRIRACE_NET_TIMEOUT_MS", "5000"}};
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
