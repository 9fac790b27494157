// hostccl's shared-memory path: the ring (ShmRing) and the links that use it
// for same-host peers (ShmPeerLinks), two ranks as threads of this process,
// the set-up handshake over an in-process stand-in for the net links.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/params.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hostccl/src/shm_peer_links.h"
#include "hostccl/src/shm_ring.h"
#include "tests/hostccl/mail_links.h"

namespace trirace::hostccl {
namespace {

using ::testing::Combine;
using ::testing::HasSubstr;
using ::testing::Values;

uint64_t FreshCommHash() {
  static std::atomic<uint64_t> n{0};
  return (static_cast<uint64_t>(getpid()) << 32) ^ static_cast<uint64_t>(MonotonicNs()) ^ (++n << 20);
}

bool ShmNameExists(const std::string& name) { return std::filesystem::exists("/dev/shm" + name); }

// Files in /dev/shm of communicator `comm_hash`.
int ShmFilesOf(uint64_t comm_hash) {
  const std::string key = absl::StrFormat("-%016x-", comm_hash);
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    if (e.path().filename().string().find(key) != std::string::npos) ++n;
  }
  return n;
}

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + i / 251) & 0xff);
  return s;
}

// --- ShmRing ---------------------------------------------------------------------------

TEST(ShmRing, CreateMakesAPrivateSegmentAndOpenRemovesItsName) {
  const std::string name = ShmRing::Name(FreshCommHash(), 1, 0);
  absl::StatusOr<std::unique_ptr<ShmRing>> rx = ShmRing::Create(name, 4096);
  ASSERT_TRUE(rx.ok()) << rx.status();
  struct stat st {};
  ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, getuid());
  absl::StatusOr<std::unique_ptr<ShmRing>> again = ShmRing::Create(name, 4096);
  EXPECT_FALSE(again.ok());
  absl::StatusOr<std::unique_ptr<ShmRing>> tx = ShmRing::Open(name);
  ASSERT_TRUE(tx.ok()) << tx.status();
  EXPECT_FALSE(ShmNameExists(name));
  EXPECT_EQ((*tx)->slot_bytes(), 4096u);
}

TEST(ShmRing, OpenRejectsWhatIsNotARing) {
  const std::string name = ShmRing::Name(FreshCommHash(), 0, 1);
  EXPECT_FALSE(ShmRing::Open(name).ok());  // missing
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 16), 0);
  close(fd);
  absl::StatusOr<std::unique_ptr<ShmRing>> r = ShmRing::Open(name);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("not a hostccl ring"));
  EXPECT_FALSE(ShmNameExists(name));
}

// Messages of every size relative to the slot, more than the ring holds, in
// order, from a sender thread to a receiver thread.
class ShmRingSizes : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(ShmRingSizes, MessagesArriveWholeAndInOrder) {
  // Plain copies: a lambda may not capture a structured binding (clang 14).
  const size_t slot = std::get<0>(GetParam());
  const size_t size = std::get<1>(GetParam());
  const std::string name = ShmRing::Name(FreshCommHash(), 1, 0);
  absl::StatusOr<std::unique_ptr<ShmRing>> rx = ShmRing::Create(name, slot);
  ASSERT_TRUE(rx.ok()) << rx.status();
  absl::StatusOr<std::unique_ptr<ShmRing>> tx = ShmRing::Open(name);
  ASSERT_TRUE(tx.ok()) << tx.status();
  constexpr int kMessages = 5;
  std::thread sender([&] {
    for (int m = 0; m < kMessages; ++m) {
      const std::string data = Pattern(size + m, m);
      size_t off = 0;
      for (;;) {
        absl::StatusOr<bool> done = (*tx)->Push(data.data(), data.size(), &off);
        ASSERT_TRUE(done.ok()) << done.status();
        if (*done) break;
        std::this_thread::yield();
      }
    }
  });
  for (int m = 0; m < kMessages; ++m) {
    std::string got(size + kMessages, '\0');
    size_t off = 0, total = 0;
    for (;;) {
      absl::StatusOr<bool> done = (*rx)->Pop(got.data(), got.size(), &off, &total);
      ASSERT_TRUE(done.ok()) << done.status();
      if (*done) break;
      std::this_thread::yield();
    }
    ASSERT_EQ(total, size + m);
    got.resize(total);
    EXPECT_TRUE(got == Pattern(size + m, m)) << "message " << m << " of " << size + m << " bytes differs";
  }
  sender.join();
}

INSTANTIATE_TEST_SUITE_P(SlotAndMessage, ShmRingSizes,
                         Combine(Values(size_t{64}, size_t{4096}),
                                 Values(size_t{0}, size_t{1}, size_t{63}, size_t{4095}, size_t{4096},
                                        size_t{3 * 4096 + 5}, size_t{20 * 4096})));

TEST(ShmRing, AMessageLargerThanTheReceiveIsAnError) {
  const std::string name = ShmRing::Name(FreshCommHash(), 1, 0);
  auto rx = ShmRing::Create(name, 4096);
  auto tx = ShmRing::Open(name);
  ASSERT_TRUE(rx.ok() && tx.ok());
  const std::string data = Pattern(100, 1);
  size_t off = 0;
  ASSERT_TRUE(*(*tx)->Push(data.data(), data.size(), &off));
  char buf[64];
  size_t roff = 0, total = 0;
  absl::StatusOr<bool> r = (*rx)->Pop(buf, sizeof(buf), &roff, &total);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("100 bytes"));
}

TEST(ShmRing, CloseDeliversWhatWasSentThenFailsTheOtherSide) {
  const std::string name = ShmRing::Name(FreshCommHash(), 1, 0);
  auto rx = ShmRing::Create(name, 4096);
  auto tx = ShmRing::Open(name);
  ASSERT_TRUE(rx.ok() && tx.ok());
  const std::string data = Pattern(5000, 2);
  size_t off = 0;
  ASSERT_TRUE(*(*tx)->Push(data.data(), data.size(), &off));
  (*tx)->Close();
  EXPECT_TRUE((*rx)->peer_closed());
  std::string got(5000, '\0');
  size_t roff = 0, total = 0;
  absl::StatusOr<bool> first = (*rx)->Pop(got.data(), got.size(), &roff, &total);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  EXPECT_TRUE(got == data);
  roff = total = 0;
  absl::StatusOr<bool> second = (*rx)->Pop(got.data(), got.size(), &roff, &total);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);

  // The receiver closing fails the sender at once.
  const std::string name2 = ShmRing::Name(FreshCommHash(), 1, 0);
  auto rx2 = ShmRing::Create(name2, 4096);
  auto tx2 = ShmRing::Open(name2);
  ASSERT_TRUE(rx2.ok() && tx2.ok());
  (*rx2)->Close();
  off = 0;
  absl::StatusOr<bool> push = (*tx2)->Push(data.data(), data.size(), &off);
  ASSERT_FALSE(push.ok());
  EXPECT_EQ(push.status().code(), absl::StatusCode::kUnavailable);
}

// --- ShmPeerLinks ---------------------------------------------------------------------------

struct Pair {
  std::unique_ptr<ShmPeerLinks> links[2];
};

// Both ranks' ShmPeerLinks, set up concurrently with identities `ids`.
Pair MakePair(Mailboxes& mail, uint64_t comm_hash, const std::vector<HostIdentity>& ids) {
  Pair pair;
  std::atomic<bool> abort{false};
  const int64_t deadline = MonotonicNs() + 10'000'000'000;
  auto make = [&](int r) {
    auto t = ShmPeerLinks::Create(std::make_unique<MailLinks>(&mail, r), r, 2, comm_hash, ids, deadline, abort);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) pair.links[r] = std::move(*t);
  };
  std::thread other(make, 1);
  make(0);
  other.join();
  return pair;
}

HostIdentity Id(uint64_t key, bool shm = true) { return HostIdentity{key, static_cast<int32_t>(getpid()), shm}; }

// Polls `request` until done or error (at most 5 s).
absl::StatusOr<size_t> Wait(PeerLinks& links, void* request) {
  const int64_t end = MonotonicNs() + 5'000'000'000;
  while (MonotonicNs() < end) {
    size_t n = 0;
    absl::StatusOr<bool> done = links.Test(request, &n);
    if (!done.ok()) return done.status();
    if (*done) return n;
    std::this_thread::yield();
  }
  return absl::DeadlineExceededError("request still not done after 5 s");
}

// Rank 0 sends `sizes` to rank 1 while rank 1 sends them back; both checked.
void ExchangeBothWays(Pair& pair, const std::vector<size_t>& sizes) {
  auto run = [&](int r) {
    PeerLinks& l = *pair.links[r];
    MemRegion any(nullptr, 0);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const std::string out = Pattern(sizes[i], r * 100 + static_cast<int>(i));
      std::string in(sizes[i], '\0');
      absl::StatusOr<void*> s = l.Isend(1 - r, out.data(), out.size(), any);
      absl::StatusOr<void*> v = l.Irecv(1 - r, in.data(), in.size(), any);
      ASSERT_TRUE(s.ok() && v.ok() && *s != nullptr && *v != nullptr);
      absl::StatusOr<size_t> got = Wait(l, *v);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, sizes[i]);
      EXPECT_TRUE(in == Pattern(sizes[i], (1 - r) * 100 + static_cast<int>(i))) << "message " << i;
      ASSERT_TRUE(Wait(l, *s).ok());
    }
  };
  std::thread other(run, 1);
  run(0);
  other.join();
}

TEST(ShmPeerLinks, SameHostPeersMoveTheirBytesThroughSharedMemory) {
  Mailboxes mail(2);
  const uint64_t hash = FreshCommHash();
  Pair pair = MakePair(mail, hash, {Id(7), Id(7)});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  for (auto& l : pair.links) {
    EXPECT_EQ(l->shm_send_peers(), 1);
    EXPECT_EQ(l->shm_recv_peers(), 1);
  }
  EXPECT_EQ(ShmFilesOf(hash), 0) << "the rings' names outlived the set-up";
  const int handshake = mail.messages();
  EXPECT_EQ(handshake, 4);  // two words each way
  ExchangeBothWays(pair, {1, 4096, (size_t{1} << 20) + 3, size_t{10} << 20});
  EXPECT_EQ(mail.messages(), handshake) << "data went over the net links";
}

// Rank 0 sends `messages` of `bytes` to rank 1 under the device clocks given
// (PeerLinks::StartClock); rank 1 posts its receives only once every send
// is posted, so sends beyond the ring's room wait for it. The two ClockEnd()s.
struct ClockEnds {
  std::optional<int64_t> sender, receiver;
  bool operator==(const ClockEnds&) const = default;
};
void PrintTo(const ClockEnds& e, std::ostream* os) {
  auto text = [](std::optional<int64_t> t) { return t ? std::to_string(*t) : std::string("none"); };
  *os << "{sender " << text(e.sender) << ", receiver " << text(e.receiver) << "}";
}
ClockEnds SendUnderClocks(Pair& pair, std::optional<int64_t> send_clock, std::optional<int64_t> recv_clock,
                          int messages, size_t bytes) {
  ClockEnds out;
  std::atomic<bool> posted{false};
  std::thread receiver([&] {
    PeerLinks& l = *pair.links[1];
    MemRegion any(nullptr, 0);
    while (!posted.load()) std::this_thread::yield();
    l.StartClock(recv_clock);
    std::string in(bytes, '\0');
    for (int i = 0; i < messages; ++i) {
      absl::StatusOr<void*> v = l.Irecv(0, in.data(), bytes, any);
      ASSERT_TRUE(v.ok() && *v != nullptr);
      ASSERT_TRUE(Wait(l, *v).ok());
    }
    out.receiver = l.ClockEnd();
  });
  PeerLinks& l = *pair.links[0];
  MemRegion any(nullptr, 0);
  l.StartClock(send_clock);
  const std::string data(bytes, 'x');
  std::vector<void*> sends;
  for (int i = 0; i < messages; ++i) {
    absl::StatusOr<void*> s = l.Isend(1, data.data(), bytes, any);
    EXPECT_TRUE(s.ok() && *s != nullptr);
    if (s.ok() && *s != nullptr) sends.push_back(*s);
  }
  posted = true;
  for (void* s : sends) EXPECT_TRUE(Wait(l, s).ok());
  out.sender = l.ClockEnd();
  receiver.join();
  return out;
}

TEST(ShmPeerLinks, AReceiveEndsOnTheClockNoEarlierThanItsSenderStarted) {
  Mailboxes mail(2);
  Pair pair = MakePair(mail, FreshCommHash(), {Id(7), Id(7)});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  // The sender's clock is later: the receive ends there, the send at its
  // own start (the ring had room: the hop takes no device time).
  EXPECT_EQ(SendUnderClocks(pair, 2'000'000, 1'000'000, 1, 4096), (ClockEnds{2'000'000, 2'000'000}));
  // The receiver's is later: it keeps its own.
  EXPECT_EQ(SendUnderClocks(pair, 1'000'000, 3'000'000, 1, 4096), (ClockEnds{1'000'000, 3'000'000}));
}

TEST(ShmPeerLinks, ASendThatWaitedForRoomEndsWhenItsReceiverStarted) {
  Mailboxes mail(2);
  Pair pair = MakePair(mail, FreshCommHash(), {Id(7), Id(7)});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  // One more one-slot message than the ring holds.
  const size_t slot = static_cast<size_t>(ParamInt(ParamId::kHostcclShmRingBytes)) / ShmRing::kSlots;
  EXPECT_EQ(SendUnderClocks(pair, 1'000'000, 5'000'000, static_cast<int>(ShmRing::kSlots) + 1, slot),
            (ClockEnds{5'000'000, 5'000'000}));
}

TEST(ShmPeerLinks, WithoutAClockAMessageCarriesTheRealTime) {
  Mailboxes mail(2);
  Pair pair = MakePair(mail, FreshCommHash(), {Id(7), Id(7)});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  const int64_t before = MonotonicNs();
  ClockEnds e = SendUnderClocks(pair, std::nullopt, 1'000, 1, 4096);
  EXPECT_EQ(e.sender, std::nullopt) << "no clock started";
  ASSERT_TRUE(e.receiver.has_value());
  EXPECT_GE(*e.receiver, before);
  EXPECT_LE(*e.receiver, MonotonicNs());
}

TEST(ShmPeerLinks, TheNetworkLinksGiveNoClock) {
  Mailboxes mail(2);
  Pair pair = MakePair(mail, FreshCommHash(), {Id(7), Id(8)});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  EXPECT_EQ(SendUnderClocks(pair, 2'000'000, 1'000'000, 1, 4096), (ClockEnds{std::nullopt, std::nullopt}));
}

// Another host, or shared memory off on either side: the net links carry it.
class ShmPeerLinksApart : public ::testing::TestWithParam<std::tuple<uint64_t, bool, bool>> {};

TEST_P(ShmPeerLinksApart, TheInnerLinksCarryTheBytes) {
  const auto [key1, shm0, shm1] = GetParam();
  Mailboxes mail(2);
  const uint64_t hash = FreshCommHash();
  Pair pair = MakePair(mail, hash, {Id(7, shm0), Id(key1, shm1)});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  EXPECT_EQ(pair.links[0]->shm_send_peers() + pair.links[1]->shm_recv_peers(), 0);
  EXPECT_EQ(mail.messages(), 0) << "no handshake between ranks that cannot share memory";
  ExchangeBothWays(pair, {1, 70000});
  EXPECT_EQ(mail.messages(), 4);
  EXPECT_EQ(ShmFilesOf(hash), 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, ShmPeerLinksApart,
                         Values(std::make_tuple(uint64_t{8}, true, true), std::make_tuple(uint64_t{7}, false, true),
                                std::make_tuple(uint64_t{7}, true, false)));

TEST(ShmPeerLinks, DataSentBeforeAPeerClosesArrivesThenTheLinkFails) {
  Mailboxes mail(2);
  Pair pair = MakePair(mail, FreshCommHash(), {Id(7), Id(7)});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  MemRegion any(nullptr, 0);
  const std::string out = Pattern(3000, 5);
  absl::StatusOr<void*> s = pair.links[1]->Isend(0, out.data(), out.size(), any);
  ASSERT_TRUE(s.ok() && *s != nullptr);
  ASSERT_TRUE(Wait(*pair.links[1], *s).ok());
  pair.links[1]->Close();
  std::string in(3000, '\0');
  absl::StatusOr<void*> v = pair.links[0]->Irecv(1, in.data(), in.size(), any);
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(Wait(*pair.links[0], *v).ok());
  EXPECT_TRUE(in == out);
  // The failure shows on the next receive, when it is posted or polled.
  v = pair.links[0]->Irecv(1, in.data(), in.size(), any);
  absl::StatusOr<size_t> next = v.ok() ? Wait(*pair.links[0], *v) : absl::StatusOr<size_t>(v.status());
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(next.status().message()), HasSubstr("receiving from rank 1 over shared memory"));
}

// A peer process that is gone (reaped, or a zombie its parent has not
// reaped yet) fails a stalled transfer instead of hanging it.
class ShmPeerLinksDeadPeer : public ::testing::TestWithParam<bool> {};

TEST_P(ShmPeerLinksDeadPeer, AStalledReceiveFails) {
  const bool reap = GetParam();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  if (reap) ASSERT_EQ(waitpid(child, nullptr, 0), child);
  else std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it exit
  Mailboxes mail(2);
  HostIdentity dead = Id(7);
  dead.pid = child;
  Pair pair = MakePair(mail, FreshCommHash(), {Id(7), dead});
  ASSERT_TRUE(pair.links[0] && pair.links[1]);
  MemRegion any(nullptr, 0);
  char buf[16];
  absl::StatusOr<void*> v = pair.links[0]->Irecv(1, buf, sizeof(buf), any);
  ASSERT_TRUE(v.ok());
  absl::StatusOr<size_t> got = Wait(*pair.links[0], *v);
  if (!reap) waitpid(child, nullptr, 0);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(absl::StrFormat("pid %d", child)));
}

INSTANTIATE_TEST_SUITE_P(Reaped, ShmPeerLinksDeadPeer, Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "reaped" : "zombie"; });

TEST(ShmPeerLinks, ASurvivorRemovesTheRingsOfAPeerThatDiedDuringSetUp) {
  Mailboxes mail(2);
  const uint64_t hash = FreshCommHash();
  // Rank 1 made its receive ring, then died before telling rank 0.
  absl::StatusOr<std::unique_ptr<ShmRing>> orphan = ShmRing::Create(ShmRing::Name(hash, 0, 1), 4096);
  ASSERT_TRUE(orphan.ok()) << orphan.status();
  std::atomic<bool> abort{false};
  auto t = ShmPeerLinks::Create(std::make_unique<MailLinks>(&mail, 0), 0, 2, hash, {Id(7), Id(7)},
                                MonotonicNs() + 300'000'000, abort);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ShmFilesOf(hash), 0);
}

TEST(ShmPeerLinks, AnAbortEndsTheSetUpWithoutLeavingRings) {
  Mailboxes mail(2);
  const uint64_t hash = FreshCommHash();
  std::atomic<bool> abort{true};  // rank 1 never answers; the communicator is being aborted
  auto t = ShmPeerLinks::Create(std::make_unique<MailLinks>(&mail, 0), 0, 2, hash, {Id(7), Id(7)},
                                MonotonicNs() + 60'000'000'000, abort);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kAborted) << t.status();
  EXPECT_EQ(ShmFilesOf(hash), 0);
}

}  // namespace
}  // namespace trirace::hostccl
