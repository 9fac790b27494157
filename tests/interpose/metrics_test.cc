// TRIRACE_METRICS_FILE (interpose/metrics/): the Prometheus text, the gate
// counters, and the file: written every period and at Stop, replaced
// atomically, %r waiting for the rank, a failure warned once and the
// metrics stopped without harm.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/metrics/gate_counters.h"
#include "interpose/metrics/metrics_file.h"
#include "interpose/metrics/metrics_text.h"
#include "support/subprocess.h"

namespace trirace::interpose {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

MetricsSnapshot Sample() {
  MetricsSnapshot s;
  s.rank = 3;
  s.mode = "schedule";
  s.policy = "trirace";
  CommMetrics dp;
  dp.index = 1;
  dp.role = "data-parallel";
  dp.ops[size_t(TrafficClass::kDense)] = 7;
  dp.bytes[size_t(TrafficClass::kDense)] = 7 << 20;
  s.comms.push_back(dp);
  s.gated_ops = 7;
  s.held_ops = 2;
  s.held_ns = 1'500'000;
  s.releases[size_t(sched::ReleaseReason::kDenseGap)] = 5;
  s.releases[size_t(sched::ReleaseReason::kMaxHold)] = 2;
  s.links.push_back({"eth0", 1000, 2000, 64});
  s.schedule_fallback = "";
  s.passthrough_reason = "trace: \"disk\" full\nagain";
  s.writes = 4;
  return s;
}

TEST(MetricsTextTest, EveryFamilyHasHelpAndTypeAndItsSamplesTheirLabels) {
  const std::string text = PrometheusText(Sample());
  EXPECT_THAT(text, HasSubstr("# TYPE trirace_ops_total counter\n"));
  EXPECT_THAT(text, HasSubstr("trirace_info{rank=\"3\",mode=\"schedule\",policy=\"trirace\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("trirace_ops_total{rank=\"3\",comm=\"1\",role=\"data-parallel\",class=\"DENSE\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("trirace_bytes_total{rank=\"3\",comm=\"1\",role=\"data-parallel\",class=\"DENSE\"} 7340032\n"));
  EXPECT_THAT(text, HasSubstr("trirace_gate_holds_total{rank=\"3\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("trirace_gate_hold_seconds_total{rank=\"3\"} 0.0015\n"));
  EXPECT_THAT(text, HasSubstr("trirace_gate_releases_total{rank=\"3\",reason=\"dense-gap\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("trirace_link_tx_bytes_total{rank=\"3\",device=\"eth0\"} 1000\n"));
  EXPECT_THAT(text, HasSubstr("trirace_link_urgent_send_bytes{rank=\"3\",device=\"eth0\"} 64\n"));
  // Label values escaped as the format says: backslash, quote, newline.
  EXPECT_THAT(text, HasSubstr("reason=\"trace: \\\"disk\\\" full\\nagain\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("what=\"schedule\""))) << "no schedule fallback, no sample";
  EXPECT_THAT(text, Not(HasSubstr("class=\"P2P\""))) << "classes without ops are left out";
}

TEST(GateCountersTest, OnlyGatedRecordsCountAndAHoldIsAWaitAboveZero) {
  GateCounters c;
  TraceRecord ungated;  // gate_wait_ns -1
  TraceRecord at_once;
  at_once.gate_wait_ns = 0;
  at_once.release_reason = static_cast<int16_t>(sched::ReleaseReason::kP2P);
  TraceRecord held;
  held.gate_wait_ns = 2'000;
  held.release_reason = static_cast<int16_t>(sched::ReleaseReason::kMaxHold);
  for (const TraceRecord* r : {&ungated, &at_once, &held, &held}) c.Add(*r);
  MetricsSnapshot s;
  c.Fill(&s);
  EXPECT_EQ(s.gated_ops, 3u);
  EXPECT_EQ(s.held_ops, 2u);
  EXPECT_EQ(s.held_ns, 4'000);
  EXPECT_EQ(s.releases[size_t(sched::ReleaseReason::kP2P)], 1u);
  EXPECT_EQ(s.releases[size_t(sched::ReleaseReason::kMaxHold)], 2u);
}

class MetricsFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing_support::MakeTempDir("trirace-metrics-"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(MetricsFileTest, ItWritesEveryPeriodAndAtStopAndLeavesNoTemporaryFile) {
  std::atomic<int> snapshots{0};
  MetricsFile::Options o;
  o.path_pattern = (dir_ / "trirace.prom").string();
  o.period = absl::Milliseconds(20);
  o.snapshot = [&] {
    ++snapshots;
    return Sample();
  };
  absl::StatusOr<std::unique_ptr<MetricsFile>> m = MetricsFile::Start(std::move(o));
  ASSERT_TRUE(m.ok()) << m.status();
  for (int i = 0; i < 500 && (*m)->writes() < 3; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_GE((*m)->writes(), 3u);
  (*m)->Stop();
  const uint64_t writes = (*m)->writes();
  EXPECT_EQ(uint64_t(snapshots.load()), writes) << "one snapshot a write";
  const std::string text = Read(dir_ / "trirace.prom");
  EXPECT_THAT(text, HasSubstr("trirace_metrics_writes_total{rank=\"unknown\"} " + std::to_string(writes) + "\n"))
      << "the last write is Stop's, with the count";
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "trirace.prom") << "a temporary file left behind";
  }
  EXPECT_EQ(files, 1);
  (*m)->Stop();  // twice: nothing more
  EXPECT_EQ((*m)->writes(), writes);
}

TEST_F(MetricsFileTest, APercentRPathWaitsForTheRank) {
  std::atomic<int> rank{-1};
  MetricsFile::Options o;
  o.path_pattern = (dir_ / "trirace.%r.prom").string();
  o.period = absl::Milliseconds(10);
  o.snapshot = Sample;
  o.rank = [&]() -> std::optional<int> { return rank >= 0 ? std::optional<int>(rank.load()) : std::nullopt; };
  absl::StatusOr<std::unique_ptr<MetricsFile>> m = MetricsFile::Start(std::move(o));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ((*m)->writes(), 0u) << "no rank, no file";
  rank = 5;
  for (int i = 0; i < 500 && (*m)->writes() == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  (*m)->Stop();
  EXPECT_EQ((*m)->path(), (dir_ / "trirace.5.prom").string());
  EXPECT_THAT(Read(dir_ / "trirace.5.prom"), HasSubstr("trirace_info{rank=\"5\""));
}

TEST_F(MetricsFileTest, AFolderThatDoesNotExistStopsTheMetricsWithoutHarm) {
  std::atomic<int> snapshots{0};
  MetricsFile::Options o;
  o.path_pattern = (dir_ / "missing" / "trirace.prom").string();
  o.period = absl::Milliseconds(5);
  o.snapshot = [&] {
    ++snapshots;
    return Sample();
  };
  absl::StatusOr<std::unique_ptr<MetricsFile>> m = MetricsFile::Start(std::move(o));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::SleepFor(absl::Milliseconds(60));
  (*m)->Stop();
  EXPECT_EQ((*m)->writes(), 0u);
  EXPECT_EQ(snapshots.load(), 1) << "after the first failure nothing more is tried";
}

TEST(MetricsFileStartTest, BadOptionsAreRefusedNamingTheVariable) {
  MetricsFile::Options o;
  o.snapshot = Sample;
  EXPECT_THAT(std::string(MetricsFile::Start(o).status().message()), HasSubstr("TRIRACE_METRICS_FILE"));
  o.path_pattern = "/tmp/x.prom";
  o.period = absl::ZeroDuration();
  EXPECT_THAT(std::string(MetricsFile::Start(o).status().message()), HasSubstr("TRIRACE_METRICS_PERIOD_S"));
}

}  // namespace
}  // namespace trirace::interpose
