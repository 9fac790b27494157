// The receiver-ready handshake of hostccl's ring collectives (data_mover.h):
// with it, a rank sends no data to the next rank over the network before
// that rank has started the same collective; without it, sends are eager.
// Ranks are threads of this process over MailLinks (mail_links.h).
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "hostccl/src/algorithms.h"
#include "hostccl/src/data_mover.h"
#include "hostccl/src/reduce.h"
#include "tests/hostccl/mail_links.h"

namespace trirace::hostccl {
namespace {

using ::testing::Bool;
using ::testing::Combine;
using ::testing::Values;

constexpr int kDepth = 2;
constexpr size_t kSlotBytes = 4096;
constexpr size_t kCount = 3000;  // floats per rank: several slices

// One rank: its links and the mover's environment over them.
struct Rank {
  Rank(Mailboxes* mail, int rank, bool receiver_ready, bool crosses_network)
      : links(mail, rank), staging(2 * kDepth * kSlotBytes + 8, '\0'), region(staging.data(), staging.size()) {
    links.set_crosses_network(crosses_network);
    env.links = &links;
    env.abort = &abort;
    env.rank = rank;
    env.depth = kDepth;
    env.slot_bytes = kSlotBytes;
    env.staging = staging.data();
    env.staging_region = &region;
    env.receiver_ready = receiver_ready;
    env.ready_tokens = staging.data() + 2 * kDepth * kSlotBytes;
  }
  MailLinks links;
  std::string staging;
  MemRegion region;
  std::atomic<bool> abort{false};
  MoverEnv env;
};

// Data messages (more than a token's byte) put from `src` to `dst` so far.
int DataMessages(Mailboxes& mail, int src, int dst) {
  int n = 0;
  for (size_t size : mail.PutSizes(src, dst)) n += size > 1 ? 1 : 0;
  return n;
}

// An all-reduce (sum) or a broadcast from rank 0 of `nranks` ranks whose
// last rank calls late: it starts once its predecessor has sent it data,
// or after `patience_ms` if none came. Returns how many data messages the
// predecessor had sent by then and checks every rank's result. Where data
// is expected early the patience is long (the wait ends when it comes);
// where none is, a short wait suffices: data sent after it cannot make the
// test pass wrongly.
int DataSentBeforeTheLateRankStarted(NcclFunc func, int nranks, bool receiver_ready, bool crosses_network,
                                     int patience_ms) {
  Mailboxes mail(nranks);
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < nranks; ++r) {
    ranks.push_back(std::make_unique<Rank>(&mail, r, receiver_ready, crosses_network));
  }
  const int late = nranks - 1, before = late - 1;
  std::atomic<int> early{-1};
  auto run = [&](int r) {
    if (r == late) {
      const int64_t until = MonotonicNs() + int64_t{patience_ms} * 1'000'000;
      while (DataMessages(mail, before, late) == 0 && MonotonicNs() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      early = DataMessages(mail, before, late);
    }
    std::vector<float> in(kCount), out(kCount, -1.0f);
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>(r + 1) * static_cast<float>(i % 7);
    OpDesc op;
    op.func = func;
    op.sendbuff = in.data();
    op.recvbuff = out.data();
    op.count = kCount;
    op.type = ncclFloat32;
    op.reduction = BuiltinReduction(ncclSum, ncclFloat32, nranks);
    op.root = 0;
    Rank& me = *ranks[r];
    absl::Status st = RunCollective(op, nranks, me.env);
    me.env.regions.clear();
    ASSERT_TRUE(st.ok()) << "rank " << r << ": " << st;
    const float factor = func == NcclFunc::kAllReduce ? static_cast<float>(nranks * (nranks + 1) / 2) : 1.0f;
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(out[i], factor * static_cast<float>(i % 7)) << "rank " << r << " element " << i;
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < nranks; ++r) threads.emplace_back(run, r);
  run(0);
  for (std::thread& t : threads) t.join();
  return early.load();
}

class ReceiverReady : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(ReceiverReady, NoDataCrossesTheNetworkBeforeTheReceiverStarts) {
  const auto [nranks, receiver_ready] = GetParam();
  const int early = DataSentBeforeTheLateRankStarted(NcclFunc::kAllReduce, nranks, receiver_ready,
                                                     /*crosses_network=*/true, receiver_ready ? 100 : 10000);
  if (receiver_ready) {
    EXPECT_EQ(early, 0) << "data reached the late rank before it started the all-reduce";
  } else {
    EXPECT_GT(early, 0) << "eager sends should not wait for the receiver";
  }
}

INSTANTIATE_TEST_SUITE_P(RanksAndSetting, ReceiverReady, Combine(Values(2, 3), Bool()),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  (std::get<1>(info.param) ? "ready" : "eager");
                         });

TEST(ReceiverReadyInsideAHost, LinksThatDoNotCrossTheNetworkSkipTheHandshake) {
  // Shared memory inside a host has no receiver's link to protect: sends
  // stay eager and no token is sent, even with the setting on.
  const int early = DataSentBeforeTheLateRankStarted(NcclFunc::kAllReduce, 2, /*receiver_ready=*/true,
                                                     /*crosses_network=*/false, 10000);
  EXPECT_GT(early, 0);
}

TEST(ReceiverReadyChains, ABroadcastRootDoesNotWaitForTheNextRank) {
  // A chain's head only sends; NCCL lets it finish into its buffers, so a
  // root that waited for the next rank could hang a program that works
  // with NCCL. Chains stay eager with the setting on.
  for (int nranks : {2, 3}) {
    const int early = DataSentBeforeTheLateRankStarted(NcclFunc::kBroadcast, nranks, /*receiver_ready=*/true,
                                                       /*crosses_network=*/true, 10000);
    EXPECT_GT(early, 0) << nranks << " ranks";
  }
}

TEST(ReceiverReadyTokens, EachRankSendsOneTokenPerCollectiveToTheRankItReceivesFrom) {
  Mailboxes mail(3);
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(std::make_unique<Rank>(&mail, r, true, true));
  auto run = [&](int r) {
    std::vector<float> buf(kCount, 1.0f);
    for (int i = 0; i < 2; ++i) {
      OpDesc op;
      op.func = NcclFunc::kAllReduce;
      op.sendbuff = buf.data();
      op.recvbuff = buf.data();
      op.count = kCount;
      op.reduction = BuiltinReduction(ncclSum, ncclFloat32, 3);
      absl::Status st = RunCollective(op, 3, ranks[r]->env);
      ranks[r]->env.regions.clear();
      ASSERT_TRUE(st.ok()) << st;
    }
    EXPECT_EQ(buf[0], 9.0f);
  };
  std::thread a(run, 1), b(run, 2);
  run(0);
  a.join();
  b.join();
  for (int r = 0; r < 3; ++r) {
    const int prev = (r + 2) % 3, next = (r + 1) % 3;
    std::vector<size_t> back = mail.PutSizes(r, prev);
    EXPECT_EQ(back, (std::vector<size_t>{1, 1})) << "rank " << r << " to the rank it receives from";
    std::vector<size_t> forward = mail.PutSizes(r, next);
    ASSERT_FALSE(forward.empty());
    for (size_t size : forward) EXPECT_GT(size, 1u) << "rank " << r << " sent a token forward";
  }
}

}  // namespace
}  // namespace trirace::hostccl
