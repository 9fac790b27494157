// Unit tests of TCP transport pieces that need no remote peer: interface
// selection, handle and hello checksums, stripe layout, traffic classes, the
// minimum RTO, the part workers over socket pairs.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/env_guard.h"
#include "common/logging.h"
#include "gtest/gtest.h"
#include "plugin/core/request_handle.h"
#include "plugin/core/traffic_class.h"
#include "plugin/transport/tcp/interfaces.h"
#include "plugin/transport/tcp/part_workers.h"
#include "plugin/transport/tcp/socket.h"
#include "plugin/transport/tcp/wire.h"
#include "trirace/trirace.h"

namespace trirace::net::tcp {
namespace {

TEST(NetPluginInterfaces, LoopbackWhenAskedFor) {
  auto found = DiscoverInterfaces(InterfaceSpec::Parse("=lo"));
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].name, "lo");
  EXPECT_TRUE((*found)[0].loopback);
  EXPECT_TRUE((*found)[0].addr.IsLoopback());
  EXPECT_GT((*found)[0].speed_mbps, 0);
}

TEST(NetPluginInterfaces, NeverEmptyWithoutSpec) {
  auto found = DiscoverInterfaces(InterfaceSpec::Parse(""));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->empty()) << "loopback is the fallback";
  for (const Interface& itf : *found) {
    EXPECT_FALSE(itf.name.rfind("docker", 0) == 0) << itf.name;
  }
}

TEST(NetPluginWire, ChecksumsCoverEveryField) {
  ConnectHandle h{};
  h.magic = kHandleMagic;
  h.version = kWireVersion;
  h.token = 1234;
  h.checksum = HandleChecksum(h);
  ConnectHandle changed = h;
  changed.token ^= 1;
  EXPECT_NE(HandleChecksum(changed), h.checksum);
  changed = h;
  changed.stage = 99;  // connect's progress is not covered
  EXPECT_EQ(HandleChecksum(changed), h.checksum);

  Hello hello{kHelloMagic, kWireVersion, 1, 4, 0, 0, 5, 6, 7};
  uint32_t sum = HelloChecksum(hello);
  hello.checksum = sum;
  EXPECT_EQ(HelloChecksum(hello), sum) << "the checksum field itself is excluded";
  hello.conn_id = 8;
  EXPECT_NE(HelloChecksum(hello), sum);
}

TEST(NetPluginWire, PartsCoverTheMessageExactly) {
  for (uint64_t size : {uint64_t{65536}, uint64_t{1000003}, uint64_t{64} << 20}) {
    for (uint32_t nparts = 1; nparts <= 16; ++nparts) {
      uint64_t next = 0;
      for (uint32_t k = 0; k < nparts; ++k) {
        uint64_t offset, len;
        PartRange(size, nparts, k, &offset, &len);
        EXPECT_EQ(offset, next);
        next = offset + len;
      }
      EXPECT_EQ(next, size);
    }
  }
}

TEST(NetPluginTrafficClass, ClassPriorityPutsP2PInTheFirstBandAndDenseInTheLast) {
  EXPECT_EQ(MarksForClass(TrafficClass::kP2P), (ClassMarks{0xb8, 6}));  // EF, pfifo_fast band 0
  EXPECT_EQ(MarksForClass(TrafficClass::kSparse), (ClassMarks{0, 0}));  // band 1
  EXPECT_EQ(MarksForClass(TrafficClass::kDense), (ClassMarks{0x20, 1}));  // CS1, band 2
  EXPECT_EQ(MarksForClass(TrafficClass::kOther), std::nullopt);  // unattributed: untouched
}

TEST(NetPluginTrafficClass, PriorityIsThePrecedenceBits) {
  EXPECT_EQ(PriorityForTrafficClass(0), 0);
  EXPECT_EQ(PriorityForTrafficClass(0xb8), 5);  // DSCP EF (46) << 2
  EXPECT_EQ(PriorityForTrafficClass(255), 7);
}

TEST(NetPluginClasses, OpMasksMapToTrafficClasses) {
  EXPECT_EQ(ClassForOpMask(1u << TRIRACE_NCCL_FUNC_SEND), TrafficClass::kP2P);
  EXPECT_EQ(ClassForOpMask(1u << TRIRACE_NCCL_FUNC_RECV), TrafficClass::kP2P);
  EXPECT_EQ(ClassForOpMask(1u << TRIRACE_NCCL_FUNC_ALLGATHER), TrafficClass::kSparse);
  EXPECT_EQ(ClassForOpMask(1u << TRIRACE_NCCL_FUNC_ALLTOALL), TrafficClass::kSparse);
  EXPECT_EQ(ClassForOpMask(1u << TRIRACE_NCCL_FUNC_ALLREDUCE), TrafficClass::kDense);
  EXPECT_EQ(ClassForOpMask(1u << TRIRACE_NCCL_FUNC_REDUCESCATTER), TrafficClass::kDense);
  EXPECT_EQ(ClassForOpMask(static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF)), TrafficClass::kOther);
  EXPECT_EQ(ClassForOpMask(0), TrafficClass::kOther);
}

TEST(NetPluginInterfaces, AutoSocketCountStripesOnlyOnLoopbackAndFastLinks) {
  EXPECT_EQ(AutoDataSockets(kDefaultSpeedMbps, /*loopback=*/true), 4);
  EXPECT_EQ(AutoDataSockets(1000, /*loopback=*/true), 4);
  EXPECT_EQ(AutoDataSockets(1000, false), 1);
  EXPECT_EQ(AutoDataSockets(10000, false), 1);  // also a veth, and an unknown speed
  EXPECT_EQ(AutoDataSockets(24999, false), 1);
  EXPECT_EQ(AutoDataSockets(25000, false), 4);
  EXPECT_EQ(AutoDataSockets(400000, false), 4);
}

// The minimum RTO a socket is left with, or -1 where the kernel lacks it.
int RtoMinOf(int fd) {
  int v = -1;
  socklen_t len = sizeof(v);
  return getsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &v, &len) == 0 ? v : -1;
}

TEST(NetPluginSocket, SetRtoMinReportsWhatTheKernelKept) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(fd.valid());
  absl::StatusOr<int> set = SetRtoMin(fd.get(), 20000);
  if (absl::IsUnimplemented(set.status())) GTEST_SKIP() << set.status();
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_GE(*set, 20000);
  EXPECT_LT(*set, 30000) << "more than a few kernel ticks above the asked 20 ms";
  EXPECT_EQ(RtoMinOf(fd.get()), *set);
  // Below the kernel's two-tick floor: raised to the floor, not refused.
  set = SetRtoMin(fd.get(), 1);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_GT(*set, 1);
  EXPECT_LE(*set, 20000);
  EXPECT_EQ(RtoMinOf(fd.get()), *set);
}

TEST(NetPluginSocket, SetRtoMinRefusesValuesOutsideTheKernelRange) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(fd.valid());
  const int before = RtoMinOf(fd.get());
  for (int us : {0, -5, 200001}) {
    absl::StatusOr<int> set = SetRtoMin(fd.get(), us);
    EXPECT_TRUE(absl::IsInvalidArgument(set.status())) << us << ": " << set.status();
    EXPECT_NE(set.status().message().find("expected 1 to 200000"), std::string::npos) << set.status();
  }
  EXPECT_EQ(RtoMinOf(fd.get()), before);
}

TEST(NetPluginSocket, ConfigureDataSocketAppliesTheMinimumRtoOnlyWhenAsked) {
  UniqueFd fresh(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(fresh.valid());
  const int kernel = RtoMinOf(fresh.get());
  if (kernel < 0) GTEST_SKIP() << "this kernel has no TCP_RTO_MIN_US (Linux 6.15 or later)";
  UniqueFd asked(socket(AF_INET, SOCK_STREAM, 0));
  UniqueFd left(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(ConfigureDataSocket(asked.get(), SocketOptions{-1, 0, 16000}).ok());
  ASSERT_TRUE(ConfigureDataSocket(left.get(), SocketOptions{-1, 0, 0}).ok());
  EXPECT_GE(RtoMinOf(asked.get()), 16000);
  EXPECT_LT(RtoMinOf(asked.get()), 26000);
  EXPECT_EQ(RtoMinOf(left.get()), kernel);
}

TEST(NetPluginRequestHandle, PacksEveryFieldAndRejectsWhatIsNotAHandle) {
  const RequestHandleFields f{.comm_index = 65535, .generation = 0x7fffff, .seq = 0xbeef, .slot = 31};
  const uint64_t h = PackRequestHandle(f);
  EXPECT_NE(h & kRequestMarker, 0u);
  const std::optional<RequestHandleFields> back = UnpackRequestHandle(h);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->comm_index, 65535u);
  EXPECT_EQ(back->generation, 0x7fffffu);
  EXPECT_EQ(back->seq, 0xbeef);
  EXPECT_EQ(back->slot, 31);
  // Only the low 23 bits of a generation travel.
  EXPECT_EQ(UnpackRequestHandle(PackRequestHandle({.generation = 0x1800001}))->generation, 1u);
  EXPECT_EQ(UnpackRequestHandle(h & ~kRequestMarker), std::nullopt) << "a comm handle, not a request";
  EXPECT_EQ(UnpackRequestHandle(kRequestMarker), std::nullopt) << "index 0 names no comm";
}

struct CapturedLines {
  std::mutex mu;
  std::vector<std::string> lines;
};

void Capture(void* ctx, LogLevel, Subsys, const char*, int, absl::string_view msg) {
  auto* c = static_cast<CapturedLines*>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->lines.emplace_back(msg);
}

// Parts queued on two data sockets arrive whole and in place, and closing
// logs (TRACE) how many parts each thread moved and how it spent its time.
TEST(NetPluginPartWorkers, MoveEveryPartAndLogWhatEachThreadDid) {
  EnvGuard env;
  env.Set("TRIRACE_DEBUG", "TRACE").Set("TRIRACE_DEBUG_SUBSYS", "NET").Apply();
  CapturedLines captured;
  log::SetSink(Capture, &captured);
  int pair[2][2];
  for (auto& p : pair) ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
  constexpr int kMessages = 20;
  constexpr size_t kPart = 64 << 10;
  std::vector<char> out(2 * kPart), in(2 * kPart * kMessages, 0);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 7 + 1);
  std::atomic<bool> failed{false};
  auto fail = [&](absl::Status) { failed = true; };
  {
    PartWorkers sender({pair[0][0], pair[1][0]}, 2, /*sending=*/true, 10000, fail);
    PartWorkers receiver({pair[0][1], pair[1][1]}, 2, /*sending=*/false, 10000, fail);
    std::atomic<int> sent{2 * kMessages}, received{2 * kMessages};
    for (int m = 0; m < kMessages; ++m) {
      for (int k = 0; k < 2; ++k) {
        ASSERT_TRUE(receiver.Enqueue(k, {in.data() + (2 * m + k) * kPart, kPart, &received}).ok());
        ASSERT_TRUE(sender.Enqueue(k, {out.data() + k * kPart, kPart, &sent}).ok());
      }
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((sent.load() > 0 || received.load() > 0) && !failed && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(received.load(std::memory_order_acquire), 0);
    EXPECT_FALSE(failed);
    for (int m = 0; m < kMessages; ++m) {
      ASSERT_EQ(std::memcmp(in.data() + 2 * m * kPart, out.data(), out.size()), 0) << "message " << m;
    }
  }
  log::SetSink(nullptr, nullptr);
  for (auto& p : pair) {
    close(p[0]);
    close(p[1]);
  }
  std::vector<std::string> closed;
  for (const std::string& l : captured.lines) {
    if (l.find("comm closed") != std::string::npos) closed.push_back(l);
  }
  ASSERT_EQ(closed.size(), 2u);
  for (const std::string& l : closed) {
    EXPECT_NE(l.find("thread 0: 20 parts, waiting for a part "), std::string::npos) << l;
    EXPECT_NE(l.find("thread 1: 20 parts, waiting for a part "), std::string::npos) << l;
    EXPECT_NE(l.find("moving "), std::string::npos) << l;
  }
}

}  // namespace
}  // namespace trirace::net::tcp
