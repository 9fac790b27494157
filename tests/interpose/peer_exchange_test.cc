// The peer exchange (interpose/network/peer_exchange.h) in 4-rank jobs over hostccl
// with the shim preloaded in schedule mode: every blocking comm — made by
// init, by split, by two threads at once, inside a group — learns the host
// of each of its ranks (two "hosts" by TRIRACE_HOST_ID); a nonblocking comm
// is left alone; every all-reduce is right (the extra all-gather neither
// reorders nor deadlocks anything); TRIRACE_PEER_EXCHANGE=0 and observe
// mode exchange nothing.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rank_launcher.h"

namespace trirace::interpose::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;
using testing_support::ProcessResult;

constexpr int kRanks = 4;
const std::vector<std::string> kUnset = {"LD_PRELOAD",          "TRIRACE_MODE",         "TRIRACE_TRACE",
                                         "TRIRACE_NCCL_LIBRARY", "TRIRACE_DEBUG",        "TRIRACE_DEBUG_FILE",
                                         "TRIRACE_DEBUG_SUBSYS", "NCCL_NET_PLUGIN",      "TRIRACE_POLICY",
                                         "TRIRACE_HOST_ID",      "TRIRACE_PEER_EXCHANGE", "TRIRACE_TOPO_FILE",
                                         "TRIRACE_NIC_GBPS",     "TRIRACE_CHUNK_US",     "TRIRACE_CHUNK_BYTES",
                                         "TRIRACE_NET_CLASS_PRIORITY", "TRIRACE_FRONT_STAGE_FIRST",
                                         "TRIRACE_CHUNK_MIN_BYTES", "TRIRACE_CHUNK_FLOAT_REDUCTIONS"};

class PeerExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
  }

  // Ranks 0, 1 on host `a`, ranks 2, 3 on `b`; `per_rank[r]` ("K=V"), if
  // given, is one more variable of rank r alone.
  static std::vector<ProcessResult> Run(std::vector<std::pair<std::string, std::string>> env,
                                        const std::string& a = "hA", const std::string& b = "hB",
                                        std::vector<std::string> per_rank = {}) {
    RankJob job;
    job.nranks = kRanks;
    per_rank.resize(kRanks, "TRIRACE_PEER_RANK_UNUSED=1");
    job.argv = [a, b, per_rank](int rank) {
      return std::vector<std::string>{"/usr/bin/env", "TRIRACE_HOST_ID=" + (rank < 2 ? a : b), per_rank[rank],
                                      PEER_RANKS, "--lib", HOSTCCL_LIBRARY, "--rank", std::to_string(rank),
                                      "--nranks", std::to_string(kRanks)};
    };
    env.emplace_back("LD_PRELOAD", SHIM_PATH);
    env.emplace_back("TRIRACE_DEBUG", "INFO");
    env.emplace_back("TRIRACE_DEBUG_SUBSYS", "TOPO");
    job.set_env = std::move(env);
    job.unset_env = kUnset;
    job.timeout_ms = 120000;
    return LaunchRanks(job);
  }

  // The "hosts [...]" lists of a rank's log, one per exchanged comm.
  static std::vector<std::string> HostLists(const std::string& log) {
    std::vector<std::string> out;
    static const std::regex kLine(R"(peers of rank \d+: hosts \[([^\]]*)\])");
    for (std::sregex_iterator it(log.begin(), log.end(), kLine), end; it != end; ++it) out.push_back((*it)[1]);
    return out;
  }

  static void ExpectAllCommsRight(const std::vector<ProcessResult>& ranks) {
    ASSERT_EQ(ranks.size(), static_cast<size_t>(kRanks));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_FALSE(ranks[r].timed_out) << "rank " << r << " hung: " << ranks[r].err;
      EXPECT_EQ(ranks[r].exit_code, 0) << "rank " << r << ": " << ranks[r].out << ranks[r].err;
      for (const char* comm :
           {"world 10", "large 6", "large_float 6", "split 3", "thread0 10", "thread1 10", "grouped 10", "nonblocking 10"}) {
        EXPECT_THAT(ranks[r].out, HasSubstr(std::string("ok ") + comm)) << "rank " << r;
      }
      EXPECT_THAT(ranks[r].out, HasSubstr("done"));
    }
  }
};

TEST_F(PeerExchangeTest, EveryBlockingCommLearnsTheHostOfEachRank) {
  const std::vector<ProcessResult> ranks = Run({{"TRIRACE_MODE", "schedule"}});
  ExpectAllCommsRight(ranks);
  for (int r = 0; r < kRanks; ++r) {
    // world, the two thread comms and the grouped one span both hosts in
    // rank order; the split pairs rank r with r + 2 (the other host); the
    // nonblocking comm is not exchanged.
    EXPECT_THAT(HostLists(ranks[r].err),
                UnorderedElementsAre("hA hA hB hB", "hA hB", "hA hA hB hB", "hA hA hB hB", "hA hA hB hB"))
        << "rank " << r << ": " << ranks[r].err;
    EXPECT_THAT(ranks[r].err, Not(HasSubstr("peer exchange failed")));
    EXPECT_THAT(ranks[r].err, Not(HasSubstr("not issued")));
  }
}

// The chunk size is agreed from the exchanged records (chunk_planner.h):
// ranks whose own NICs run at 10, 20, 30 and 40 Gbit/s all plan with the
// slowest, 2 ms of 10 Gbit/s, on every comm that spans both hosts; the
// split pairs r with r + 2, so its slowest NIC is rank 0's or rank 1's.
TEST_F(PeerExchangeTest, RanksWithDifferentNicRatesAgreeOnTheChunkSize) {
  const std::vector<ProcessResult> ranks =
      Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_CHUNK_US", "2000"}, {"TRIRACE_NET_CLASS_PRIORITY", "off"}}, "hA",
          "hB",
          {"TRIRACE_NIC_GBPS=10", "TRIRACE_NIC_GBPS=20", "TRIRACE_NIC_GBPS=30", "TRIRACE_NIC_GBPS=40"});
  ExpectAllCommsRight(ranks);
  static const std::regex kChunk(R"(hosts \[([^\]]*)\].*chunks of (\d+) bytes \(slowest NIC ([0-9.]+) Gbit/s\))");
  std::vector<std::string> world_chunks;
  for (int r = 0; r < kRanks; ++r) {
    int comms = 0;
    const std::string& log = ranks[r].err;
    for (std::sregex_iterator it(log.begin(), log.end(), kChunk), end; it != end; ++it, ++comms) {
      const std::string hosts = (*it)[1], bytes = (*it)[2], gbps = (*it)[3];
      if (hosts == "hA hB") {
        EXPECT_EQ(gbps, r % 2 == 0 ? "10" : "20") << "rank " << r;
      } else {
        EXPECT_EQ(gbps, "10") << "rank " << r;
        EXPECT_EQ(bytes, std::to_string(2500000 / 4096 * 4096)) << "2 ms at 10 Gbit/s, whole 4 KiB granules";
        world_chunks.push_back(bytes);
      }
    }
    EXPECT_EQ(comms, 5) << "rank " << r << ": " << log;
  }
  EXPECT_EQ(world_chunks.size(), 4u * kRanks);
}

// The chunk settings travel in the records too (chunk_agreement.h): ranks
// that were given different TRIRACE_CHUNK_BYTES (4 KiB on rank 0, 8 KiB on
// rank 1, the wire-time rule on ranks 2 and 3, which leaves 64 KiB whole)
// all split the world comm's 64 KiB all-reduce into rank 0's 16 chunks, so
// their calls match and every element is right; each rank says why once.
TEST_F(PeerExchangeTest, RanksGivenDifferentChunkSettingsSplitAsRankZeroDoes) {
  const std::vector<ProcessResult> ranks =
      Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_NET_CLASS_PRIORITY", "off"}, {"TRIRACE_NIC_GBPS", "10"}}, "hA", "hB",
          {"TRIRACE_CHUNK_BYTES=4096", "TRIRACE_CHUNK_BYTES=8192", "TRIRACE_CHUNK_US=4000", "TRIRACE_CHUNK_US=2000"});
  ExpectAllCommsRight(ranks);
  static const std::regex kWorld(R"(hosts \[hA hA hB hB\].*chunks of (\d+) bytes)");
  for (int r = 0; r < kRanks; ++r) {
    const std::string& log = ranks[r].err;
    int world = 0;
    for (std::sregex_iterator it(log.begin(), log.end(), kWorld), end; it != end; ++it, ++world) {
      EXPECT_EQ((*it)[1], "4096") << "rank " << r << ": rank 0's TRIRACE_CHUNK_BYTES";
    }
    EXPECT_EQ(world, 4) << "rank " << r << ": world, two thread comms, grouped: " << log;
    EXPECT_THAT(log, HasSubstr("chunk settings differ (rank 1 has TRIRACE_CHUNK_BYTES=8192 where rank 0 has 4096)"))
        << "rank " << r;
    static const std::regex kWarn(R"(TriRace WARN TOPO [^\n]*chunk settings differ)");
    EXPECT_EQ(std::distance(std::sregex_iterator(log.begin(), log.end(), kWarn), std::sregex_iterator()), 1)
        << "rank " << r << ": one warning per process, the later comms at INFO: " << log;
  }
}

// The same for TRIRACE_CHUNK_FLOAT_REDUCTIONS: on rank 0 only, every rank
// splits the 4-rank world comm's float all-reduce (a float sum on three or
// more ranks stays whole by default), so their calls match.
TEST_F(PeerExchangeTest, RankZerosFloatSplitSettingHoldsOnEveryRank) {
  const std::vector<ProcessResult> ranks =
      Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_NET_CLASS_PRIORITY", "off"}, {"TRIRACE_CHUNK_BYTES", "4096"}}, "hA",
          "hB", {"TRIRACE_CHUNK_FLOAT_REDUCTIONS=on"});
  ExpectAllCommsRight(ranks);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_THAT(ranks[r].err,
                HasSubstr("chunk settings differ (rank 1 has TRIRACE_CHUNK_FLOAT_REDUCTIONS=off where rank 0 has on)"))
        << "rank " << r;
  }
}

// Class priority travels in the records (PeerIdentity::class_priority):
// where every rank marks classes on the wire the comms across the hosts are
// not split; one rank without it keeps the split on every rank, so the
// ranks' calls still match one for one (and every all-reduce is right).
TEST_F(PeerExchangeTest, CollectivesAreWholeOnlyWhereEveryRankHasClassPriority) {
  static const std::regex kChunk(R"(hosts \[hA hA hB hB\].*chunks of (\d+) bytes \(slowest NIC [0-9.]+ Gbit/s(;[^)]*)?\))");
  const std::string split = std::to_string(2500000 / 4096 * 4096);
  for (int without = -1; without < kRanks; without += 2) {
    std::vector<std::string> per_rank(kRanks, "TRIRACE_NET_CLASS_PRIORITY=on");
    if (without >= 0) per_rank[without] = "TRIRACE_NET_CLASS_PRIORITY=off";
    const std::vector<ProcessResult> ranks =
        Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_CHUNK_US", "2000"}, {"TRIRACE_NIC_GBPS", "10"}}, "hA", "hB",
            per_rank);
    ExpectAllCommsRight(ranks);
    for (int r = 0; r < kRanks; ++r) {
      const std::string& log = ranks[r].err;
      int world = 0;
      for (std::sregex_iterator it(log.begin(), log.end(), kChunk), end; it != end; ++it, ++world) {
        if (without < 0) {
          EXPECT_EQ((*it)[1], "0") << "rank " << r << ": class priority everywhere: whole";
          EXPECT_EQ((*it)[2], "; class priority on every rank");
        } else {
          EXPECT_EQ((*it)[1], split) << "rank " << r << ", rank " << without << " without class priority";
          EXPECT_EQ((*it)[2], "");
        }
      }
      EXPECT_GE(world, 1) << "rank " << r << ": " << log;
    }
  }
}

// Rule [R14] (interpose/network/front_stage.h): peer_ranks ends by using the world
// comm as a pipeline; ranks 0 and 2 hold the front stage of hosts hA and hB,
// so their DENSE goes ahead (by marks with class priority on the wire, by
// the later stages' gating without).
TEST_F(PeerExchangeTest, TheFrontStageOfEachHostSendsItsDenseAhead) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> env;
    bool rule_on;
    bool marks;  // class priority on the wire
  };
  const std::vector<Case> cases = {
      {{{"TRIRACE_MODE", "schedule"}}, true, true},
      {{{"TRIRACE_MODE", "schedule"}, {"TRIRACE_FRONT_STAGE_FIRST", "off"}}, false, true},
      {{{"TRIRACE_MODE", "schedule"}, {"TRIRACE_NET_CLASS_PRIORITY", "off"}}, true, false},
      {{{"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "fifo"}}, false, false},
      {{{"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "fifo"}, {"TRIRACE_FRONT_STAGE_FIRST", "on"}}, false, false},
      {{{"TRIRACE_MODE", "schedule"}, {"TRIRACE_POLICY", "fifo"}, {"TRIRACE_FRONT_STAGE_FIRST", "on"},
        {"TRIRACE_NET_CLASS_PRIORITY", "on"}}, true, true},
  };
  for (const Case& c : cases) {
    const std::vector<ProcessResult> ranks = Run(c.env);
    ExpectAllCommsRight(ranks);
    for (int r = 0; r < kRanks; ++r) {
      const bool front = r % 2 == 0;  // ranks 0, 1 on hA; 2, 3 on hB
      EXPECT_THAT(ranks[r].out, HasSubstr(c.rule_on && front ? "dense_ahead 1" : "dense_ahead 0"))
          << "rank " << r << " with " << c.env.back().first << "=" << c.env.back().second;
      if (c.rule_on) {
        EXPECT_THAT(ranks[r].err, HasSubstr(front ? "holds the front stage of host" : "holds a later stage of host"))
            << "rank " << r << ": " << ranks[r].err;
        EXPECT_THAT(ranks[r].err, HasSubstr(front ? (c.marks ? "(SPARSE's marks)" : "the host's later stages yield")
                                                  : (c.marks ? "stays in DENSE's band" : "yields to the other")))
            << "rank " << r;
      } else {
        EXPECT_THAT(ranks[r].err, Not(HasSubstr("[R14]"))) << "rank " << r;
      }
    }
  }
}

TEST_F(PeerExchangeTest, ATopologyFileGivesTheLinksAndABadOneFallsBackWithOneWarning) {
  const std::string spec = std::string(TRIRACE_TOPO_TEST_DATA) + "/two_hosts_2rail.json";
  std::vector<ProcessResult> ranks = Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_TOPO_FILE", spec}}, "node0", "node1");
  ExpectAllCommsRight(ranks);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_THAT(ranks[r].err, HasSubstr("topology from " + spec + ": 2 host(s); this host is \"node"));
    EXPECT_THAT(HostLists(ranks[r].err), ::testing::Contains("node0 node0 node1 node1")) << ranks[r].err;
  }

  const std::string dir = testing_support::MakeTempDir("trirace-peer-exchange");
  const std::string bad = dir + "/truncated.json";
  { std::ofstream(bad) << R"({"hosts": [{"key": "node0", "nics": [{"name": )"; }
  ranks = Run({{"TRIRACE_MODE", "schedule"}, {"TRIRACE_TOPO_FILE", bad}});
  ExpectAllCommsRight(ranks);
  for (int r = 0; r < kRanks; ++r) {
    const std::string& log = ranks[r].err;
    size_t warnings = 0;
    for (size_t at = log.find("TRIRACE_TOPO_FILE=" + bad); at != std::string::npos;
         at = log.find("TRIRACE_TOPO_FILE=" + bad, at + 1)) {
      ++warnings;
    }
    EXPECT_EQ(warnings, 1u) << log;
    EXPECT_THAT(log, HasSubstr("using one NIC per host"));
    EXPECT_EQ(HostLists(log).size(), 5u) << "the exchange still runs on the host-NIC model: " << log;
  }
  std::filesystem::remove_all(dir);
}

TEST_F(PeerExchangeTest, OffOrOutsideScheduleModeNothingIsExchanged) {
  for (const auto& env : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"TRIRACE_MODE", "schedule"}, {"TRIRACE_PEER_EXCHANGE", "0"}}, {{"TRIRACE_MODE", "observe"}}}) {
    const std::vector<ProcessResult> ranks = Run(env);
    ExpectAllCommsRight(ranks);
    for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(HostLists(ranks[r].err).empty()) << ranks[r].err;
  }
}

}  // namespace
}  // namespace trirace::interpose::testing
