// examples/hybrid_parallel without NCCL: the pipeline schedules (pairing of
// P2P calls between neighbouring stages, buffer-ring bounds, iteration
// markers), the model layout, flag parsing and the reference checksum.
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "config.h"
#include "data_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model.h"
#include "reference.h"
#include "schedule.h"

namespace hybrid {
namespace {

using ::testing::HasSubstr;

Config Shape(int stages, bool embedding, int micro_batches, int iterations, Schedule schedule) {
  Config c;
  c.stages = stages;
  c.embedding = embedding;
  c.micro_batches = micro_batches;
  c.iterations = iterations;
  c.warmup = 0;
  c.schedule = schedule;
  return c;
}

// One P2P operation as the trainer issues it for an action.
struct Op {
  bool send;
  int peer;
  int64_t micro_batch;
  bool forward;  // activation (true) or its gradient (false)
};

// The NCCL calls (each a group of ops) a stage makes, in order.
std::vector<std::vector<Op>> P2PCalls(const Config& c, int stage) {
  const int last = c.total_stages() - 1;
  std::vector<std::vector<Op>> calls;
  for (const Action& a : StageSchedule(c, stage)) {
    std::vector<Op> ops;
    switch (a.step) {
      case Step::kRecvForward:
        if (stage > 0) ops.push_back({false, stage - 1, a.fwd, true});
        break;
      case Step::kSendForward:
        if (stage < last) ops.push_back({true, stage + 1, a.fwd, true});
        break;
      case Step::kSendForwardRecvBackward:
        if (stage < last) {
          ops.push_back({true, stage + 1, a.fwd, true});
          ops.push_back({false, stage + 1, a.bwd, false});
        }
        break;
      case Step::kSendBackwardRecvForward:
        if (stage > 0) {
          ops.push_back({true, stage - 1, a.bwd, false});
          ops.push_back({false, stage - 1, a.fwd, true});
        }
        break;
      case Step::kRecvBackward:
        if (stage < last) ops.push_back({false, stage + 1, a.bwd, false});
        break;
      case Step::kSendBackward:
        if (stage > 0) ops.push_back({true, stage - 1, a.bwd, false});
        break;
      default:
        break;
    }
    if (!ops.empty()) calls.push_back(ops);
  }
  return calls;
}

// Runs every stage's calls with NCCL's rules: ops between two ranks match in
// posting order per direction, and a call (group) returns once each of its
// ops has its counterpart posted. Returns "" when every stage finishes and
// every matched pair carries the same micro-batch and kind; else what went
// wrong.
std::string SimulatePipeline(const Config& c) {
  const int n = c.total_stages();
  std::vector<std::vector<std::vector<Op>>> calls(n);
  for (int s = 0; s < n; ++s) calls[s] = P2PCalls(c, s);
  std::vector<size_t> next(n, 0);
  std::vector<bool> posted_current(n, false);
  // posted[{from, to, is_send}] = the ops' keys in posting order.
  std::map<std::tuple<int, int, bool>, std::vector<std::pair<int64_t, bool>>> posted;
  // index of each op of the current call in its posted list
  std::vector<std::vector<size_t>> index(n);
  for (;;) {
    bool progress = false, all_done = true;
    for (int s = 0; s < n; ++s) {
      if (next[s] == calls[s].size()) continue;
      all_done = false;
      const auto& call = calls[s][next[s]];
      if (!posted_current[s]) {
        index[s].clear();
        for (const Op& op : call) {
          auto& list = op.send ? posted[{s, op.peer, true}] : posted[{op.peer, s, false}];
          index[s].push_back(list.size());
          list.emplace_back(op.micro_batch, op.forward);
        }
        posted_current[s] = true;
        progress = true;
      }
      bool complete = true;
      for (size_t k = 0; k < call.size(); ++k) {
        const Op& op = call[k];
        const auto& other = op.send ? posted[{s, op.peer, false}] : posted[{op.peer, s, true}];
        if (other.size() <= index[s][k]) {
          complete = false;
          break;
        }
        if (other[index[s][k]] != std::make_pair(op.micro_batch, op.forward)) {
          return "stage " + std::to_string(s) + " op for micro-batch " + std::to_string(op.micro_batch) +
                 " matched micro-batch " + std::to_string(other[index[s][k]].first) + " of stage " +
                 std::to_string(op.peer);
        }
      }
      if (complete) {
        ++next[s];
        posted_current[s] = false;
        progress = true;
      }
    }
    if (all_done) return "";
    if (!progress) {
      std::string where;
      for (int s = 0; s < n; ++s) {
        where += " stage " + std::to_string(s) + " at call " + std::to_string(next[s]) + "/" +
                 std::to_string(calls[s].size());
      }
      return "deadlock:" + where;
    }
  }
}

TEST(HybridSchedule, NeighbouringStagesPairUpWithoutDeadlock) {
  for (Schedule sched : {Schedule::k1F1B, Schedule::k2BW}) {
    for (int stages = 1; stages <= 6; ++stages) {
      for (int m = 1; m <= 9; ++m) {
        for (bool emb : {false, true}) {
          Config c = Shape(stages, emb, m, 3, sched);
          std::string error;
          if (!ValidateModel(c, &error)) continue;  // 2bw needs m >= stages - 1
          EXPECT_EQ(SimulatePipeline(c), "")
              << ScheduleName(sched) << " stages=" << c.total_stages() << " micro_batches=" << m;
        }
      }
    }
  }
}

TEST(HybridSchedule, EveryMicroBatchRunsForwardThenBackwardOnceAndFitsTheRing) {
  for (Schedule sched : {Schedule::k1F1B, Schedule::k2BW}) {
    for (int stages = 1; stages <= 5; ++stages) {
      for (int m = std::max(1, stages - 1); m <= 7; ++m) {
        Config c = Shape(stages, false, m, 3, sched);
        for (int s = 0; s < stages; ++s) {
          std::set<int64_t> live;
          std::map<int64_t, int> fwd, bwd;
          const int slots = RingSlots(c, s);
          for (const Action& a : StageSchedule(c, s)) {
            // Receiving into slot g % slots must not clobber a live micro-batch.
            const bool receives_fwd = a.step == Step::kRecvForward || a.step == Step::kSendBackwardRecvForward;
            if (receives_fwd) {
              for (int64_t g : live) {
                EXPECT_NE(g % slots, a.fwd % slots) << "stage " << s << " " << ActionText(a);
              }
            }
            if (a.step == Step::kForward) {
              ++fwd[a.fwd];
              live.insert(a.fwd);
            }
            if (a.step == Step::kBackward) {
              EXPECT_EQ(fwd[a.bwd], 1) << "backward before forward: stage " << s << " " << ActionText(a);
              ++bwd[a.bwd];
              live.erase(a.bwd);
            }
          }
          EXPECT_TRUE(live.empty());
          ASSERT_EQ(fwd.size(), size_t(m) * 3);
          for (auto& [g, count] : bwd) EXPECT_EQ(count, 1) << g;
          EXPECT_EQ(bwd.size(), size_t(m) * 3);
        }
      }
    }
  }
}

TEST(HybridSchedule, IterationMarkersBracketTheirMicroBatches) {
  for (Schedule sched : {Schedule::k1F1B, Schedule::k2BW}) {
    const int m = 4, iterations = 3;
    Config c = Shape(4, false, m, iterations, sched);
    for (int s = 0; s < 4; ++s) {
      std::map<int, int> begin_at, end_at;
      std::map<int64_t, int> fwd_at, bwd_at;
      const auto actions = StageSchedule(c, s);
      for (int i = 0; i < int(actions.size()); ++i) {
        const Action& a = actions[i];
        if (a.step == Step::kIterationBegin) {
          EXPECT_TRUE(begin_at.emplace(a.iteration, i).second);
        }
        if (a.step == Step::kIterationEnd) {
          EXPECT_TRUE(end_at.emplace(a.iteration, i).second);
        }
        if (a.fwd >= 0 && !fwd_at.count(a.fwd)) fwd_at[a.fwd] = i;
        if (a.step == Step::kBackward) bwd_at[a.bwd] = i;
      }
      ASSERT_EQ(begin_at.size(), size_t(iterations));
      ASSERT_EQ(end_at.size(), size_t(iterations));
      for (int it = 0; it < iterations; ++it) {
        for (int64_t g = int64_t(it) * m; g < int64_t(it + 1) * m; ++g) {
          EXPECT_LT(begin_at[it], fwd_at[g]) << ScheduleName(sched) << " stage " << s;
          EXPECT_GT(end_at[it], bwd_at[g]) << ScheduleName(sched) << " stage " << s;
        }
        if (sched == Schedule::k1F1B && it > 0) {
          EXPECT_GT(begin_at[it], end_at[it - 1]) << "1f1b flushes between iterations";
        }
      }
    }
  }
}

TEST(HybridSchedule, TwoBWOverlapsIterationsWhere1F1BFlushes) {
  Config c = Shape(4, false, 4, 2, Schedule::k2BW);
  // Stage 0 starts iteration 1's forwards before iteration 0's last backward.
  const auto actions = StageSchedule(c, 0);
  int begin1 = -1, end0 = -1;
  for (int i = 0; i < int(actions.size()); ++i) {
    if (actions[i].step == Step::kIterationBegin && actions[i].iteration == 1) begin1 = i;
    if (actions[i].step == Step::kIterationEnd && actions[i].iteration == 0) end0 = i;
  }
  EXPECT_LT(begin1, end0);
}

TEST(HybridModel, PlacementIsABijectionInBothOrders) {
  for (Order order : {Order::kDpInner, Order::kPpInner}) {
    Config c;
    c.stages = 3;
    c.embedding = true;
    c.replicas = 3;
    c.order = order;
    std::set<std::pair<int, int>> seen;
    for (int r = 0; r < c.world_size(); ++r) {
      Place p = PlaceOf(c, r);
      EXPECT_EQ(RankOf(c, p.stage, p.replica), r);
      EXPECT_TRUE(seen.emplace(p.stage, p.replica).second);
    }
    EXPECT_EQ(seen.size(), size_t(c.world_size()));
  }
  Config c;
  c.order = Order::kPpInner;
  EXPECT_EQ(RankOf(c, 1, 0), 1);  // consecutive ranks are consecutive stages
  c.order = Order::kDpInner;
  EXPECT_EQ(RankOf(c, 0, 1), 1);  // consecutive ranks are replicas of a stage
}

TEST(HybridModel, BucketsTakeLayersBackToFrontUpToTheCap) {
  Config c;
  c.layers = 5;
  c.grad_kb = 100;
  c.bucket_kb = 250;
  auto buckets = Buckets(c);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].layers, (std::vector<int>{4, 3}));
  EXPECT_EQ(buckets[1].layers, (std::vector<int>{2, 1}));
  EXPECT_EQ(buckets[2].layers, (std::vector<int>{0}));
  EXPECT_EQ(buckets[0].elems, 2 * c.grad_elems());
  c.bucket_kb = 10;  // smaller than one layer: one layer per bucket
  EXPECT_EQ(Buckets(c).size(), 5u);
  c.embedding = true;
  c.stages = 2;
  EXPECT_EQ(FirstLayer(c, 1), 1);  // layer 0 is the embedding
  EXPECT_EQ(FirstLayer(c, 2), 1 + c.layers);
}

std::vector<std::string> Args(std::initializer_list<const char*> a) { return {a.begin(), a.end()}; }

TEST(HybridConfig, PresetAppliesFirstAndFlagsOverrideIt) {
  Config c;
  std::string error;
  ASSERT_TRUE(ParseArgs(Args({"--stages", "3", "--preset", "contention", "--act-kb=8"}), &c, &error)) << error;
  EXPECT_EQ(c.stages, 3);
  EXPECT_EQ(c.act_kb, 8);
  EXPECT_EQ(c.replicas, 2);
  EXPECT_EQ(c.schedule, Schedule::k2BW);
  EXPECT_EQ(c.order, Order::kPpInner);
  EXPECT_EQ(c.preset, "contention");
}

TEST(HybridConfig, ErrorsNameTheFlagTheValueAndWhatIsAccepted) {
  Config c;
  std::string error;
  EXPECT_FALSE(ParseArgs(Args({"--schedule", "gpipe"}), &c, &error));
  EXPECT_THAT(error, HasSubstr("--schedule 'gpipe': expected 1f1b or 2bw"));
  EXPECT_FALSE(ParseArgs(Args({"--stages", "0"}), &c, &error));
  EXPECT_THAT(error, HasSubstr("--stages '0': expected an integer from 1 to 64"));
  EXPECT_FALSE(ParseArgs(Args({"--frobnicate"}), &c, &error));
  EXPECT_THAT(error, HasSubstr("unknown flag '--frobnicate'"));
  EXPECT_FALSE(ParseArgs(Args({"--preset", "huge"}), &c, &error));
  EXPECT_THAT(error, HasSubstr("--preset 'huge': expected one of"));
  EXPECT_FALSE(ParseArgs(Args({"--layers"}), &c, &error));
  EXPECT_THAT(error, HasSubstr("--layers needs a value"));

  ASSERT_TRUE(ParseArgs(Args({"--embedding", "--stages", "1", "--nranks", "3", "--rank", "0",
                              "--uid-file", "/x"}), &c, &error));
  EXPECT_FALSE(ValidateRun(c, &error));
  EXPECT_THAT(error, HasSubstr("needs (stages + 1 embedding) x replicas = 2 x 2 = 4 ranks"));
  ASSERT_TRUE(ParseArgs(Args({"--schedule", "2bw", "--stages", "6", "--micro-batches", "3"}), &c, &error));
  EXPECT_FALSE(ValidateModel(c, &error));
  EXPECT_THAT(error, HasSubstr("2bw schedule needs at least stages - 1 = 5"));
}

TEST(HybridConfig, TheLastValueCountsAndOnOffFlagsTakeNone) {
  Config c;
  std::string error;
  ASSERT_TRUE(ParseArgs(Args({"--embedding", "--no-embedding", "--stages", "3", "--stages=5"}), &c, &error))
      << error;
  EXPECT_FALSE(c.embedding);
  EXPECT_EQ(c.stages, 5);
  ASSERT_TRUE(ParseArgs(Args({"--no-embedding", "--embedding"}), &c, &error)) << error;
  EXPECT_TRUE(c.embedding);
  EXPECT_FALSE(ParseArgs(Args({"--embedding=1"}), &c, &error));
  EXPECT_THAT(error, HasSubstr("--embedding takes no value"));
  EXPECT_FALSE(ParseArgs(Args({"stray"}), &c, &error));
  EXPECT_THAT(error, HasSubstr("unexpected argument 'stray'"));
  ASSERT_TRUE(ParseArgs(Args({"--preset", "tiny", "--help"}), &c, &error)) << error;
  EXPECT_TRUE(c.help);
  for (const char* flag : {"--preset", "--stages", "--no-embedding", "--sparse-indices", "--uid-file", "--reference"}) {
    EXPECT_THAT(Usage(), HasSubstr(flag));
  }
}

TEST(HybridConfig, RankAndRendezvousDefaultToTheLauncherEnvironment) {
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("RENDEZVOUS_FILE", "/tmp/some-id", 1);
  Config c;
  std::string error;
  ASSERT_TRUE(ParseArgs(Args({}), &c, &error)) << error;
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.uid_file, "/tmp/some-id");
  EXPECT_TRUE(ValidateRun(c, &error)) << error;
  ASSERT_TRUE(ParseArgs(Args({"--rank", "1"}), &c, &error));
  EXPECT_EQ(c.rank, 1);  // the flag wins
  setenv("RANK", "x", 1);
  EXPECT_FALSE(ParseArgs(Args({}), &c, &error));
  EXPECT_THAT(error, HasSubstr("RANK='x'"));
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  unsetenv("RENDEZVOUS_FILE");
}

Config Tiny(std::initializer_list<const char*> extra) {
  std::vector<std::string> args = {"--preset", "tiny"};
  args.insert(args.end(), extra.begin(), extra.end());
  Config c;
  std::string error;
  EXPECT_TRUE(ParseArgs(args, &c, &error)) << error;
  return c;
}

TEST(HybridReference, ChecksumDependsOnTheModelNotOnScheduleOrRankOrder) {
  const uint64_t base = ComputeExpected(Tiny({})).checksum;
  EXPECT_EQ(ComputeExpected(Tiny({"--schedule", "2bw"})).checksum, base);
  EXPECT_EQ(ComputeExpected(Tiny({"--order", "pp-inner", "--lookahead", "3"})).checksum, base);
  EXPECT_EQ(ComputeExpected(Tiny({"--fwd-us", "7", "--bucket-kb", "32"})).checksum, base);
  EXPECT_NE(ComputeExpected(Tiny({"--iterations", "5"})).checksum, base);
  EXPECT_NE(ComputeExpected(Tiny({"--micro-batches", "3"})).checksum, base);
  EXPECT_NE(ComputeExpected(Tiny({"--act-kb", "8"})).checksum, base);
  EXPECT_NE(ComputeExpected(Tiny({"--embedding", "--stages", "1"})).checksum, base);
  const uint64_t sparse = ComputeExpected(Tiny({"--embedding", "--stages", "1"})).checksum;
  EXPECT_NE(ComputeExpected(Tiny({"--embedding", "--stages", "1", "--sparse-kb", "4"})).checksum, sparse);
  EXPECT_NE(ComputeExpected(Tiny({"--embedding", "--stages", "1", "--sparse-indices", "31"})).checksum,
            sparse);
}

TEST(HybridReference, EveryRankHasItsOwnHash) {
  Expected e = ComputeExpected(Tiny({"--embedding", "--stages", "2", "--replicas", "3"}));
  ASSERT_EQ(e.rank_hashes.size(), 9u);
  std::set<uint64_t> distinct(e.rank_hashes.begin(), e.rank_hashes.end());
  EXPECT_EQ(distinct.size(), 9u);
  EXPECT_EQ(data::JobChecksum(e.rank_hashes), e.checksum);
}

TEST(HybridData, ValuesStaySmallIntegersSoSumsAreExact) {
  std::vector<float> x(1000), y(1000), g(1000);
  data::InputActivation(3, 17, x.data(), 1000);
  data::DenseForward(5, x.data(), y.data(), 1000);
  data::FillGradient(9, 2, 11, 7, g.data(), 1000);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(y[i], 0);
    EXPECT_LT(y[i], 64);
    EXPECT_EQ(y[i], float(int(y[i])));
    EXPECT_GE(g[i], -4);
    EXPECT_LE(g[i], 11);
  }
  // The fold is order-independent: a schedule may interleave micro-batches.
  uint64_t a = data::FoldTerm(data::Received::kActivation, 1, x.data(), 1000);
  uint64_t b = data::FoldTerm(data::Received::kGradient, 1, x.data(), 1000);
  uint64_t c = data::FoldTerm(data::Received::kActivation, 2, x.data(), 1000);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace hybrid
