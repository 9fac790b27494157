// Traffic through the test bed: a transfer between two hosts through the
// TriRace net plugin is held to the shaped rate (a lower bound on its time:
// the shaping is real), the plugin's occupancy counters and the qdisc's byte
// counters agree with the bytes that crossed, and the hybrid-parallel example
// runs across 2 hosts x 2 ranks with the reference checksum.
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testbed_fixture.h"

#if HAVE_HYBRID
#include "config.h"
#include "reference.h"
#endif

namespace trirace::testbed {
namespace {

using ::testing::HasSubstr;
using testing_support::RunProcess;

long long Field(const std::string& text, const std::string& key) {
  std::smatch m;
  const std::regex re(key + "=(-?[0-9]+)");
  return std::regex_search(text, m, re) ? std::stoll(m[1]) : -2;
}

class TestbedNet : public TestbedTest {};

TEST_F(TestbedNet, ShapedTransferThroughThePluginTakesAtLeastBytesOverRate) {
  constexpr long long kRateBitsPerS = 50'000'000;  // --rate 50mbit
  constexpr long long kBurst = 32768;              // --burst
  constexpr long long kBytes = 4 << 20;
  const std::string caller_before = CallerNamespaceState();
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--rate", "50mbit", "--burst", std::to_string(kBurst)}, &tb);
  if (IsSkipped() || HasFailure()) return;
  const long long tx_before = QdiscSentBytes(QdiscStats(tb.name + "-h0", "tb0"));
  const long long rx_before = QdiscSentBytes(QdiscStats(tb.name + "-fab", "p1"));

  RunOutcome o = Run(tb, {"--ranks-per-host", "1", "--timeout", "60"},
                     {NET_TRANSFER, "--plugin", NET_PLUGIN, "--bytes", std::to_string(kBytes)});
  ASSERT_EQ(o.process.exit_code, 0) << o.process.err << "\nrank 0: " << (o.rank_err.empty() ? "" : o.rank_err[0])
                                    << "\nrank 1: " << (o.rank_err.size() < 2 ? "" : o.rank_err[1]);
  ASSERT_EQ(o.rank_out.size(), 2u);
  const long long start = Field(o.rank_out[0], "start_ns");
  const long long end = Field(o.rank_out[1], "end_ns");
  ASSERT_GT(start, 0) << o.rank_out[0];
  ASSERT_GT(end, start) << o.rank_out[1];

  // Both token buckets start full: at most one burst passes at once, the
  // rest at the rate. 10% slack for the clock and the bucket's accounting.
  const double bound_s = double(kBytes - kBurst) * 8 / double(kRateBitsPerS);
  const double elapsed_s = double(end - start) / 1e9;
  EXPECT_GE(elapsed_s, 0.9 * bound_s) << "4 MiB crossed a 50 Mbit/s link in " << elapsed_s << " s";

  // The plugin counted exactly the payload on each side.
  EXPECT_EQ(Field(o.rank_out[0], "occupancy_bytes"), kBytes) << o.rank_out[0];
  EXPECT_EQ(Field(o.rank_out[1], "occupancy_bytes"), kBytes) << o.rank_out[1];

  // The shaped qdiscs on the way saw the payload plus headers (and little else).
  const long long tx = QdiscSentBytes(QdiscStats(tb.name + "-h0", "tb0")) - tx_before;
  const long long rx = QdiscSentBytes(QdiscStats(tb.name + "-fab", "p1")) - rx_before;
  EXPECT_GE(tx, kBytes);
  EXPECT_LE(tx, kBytes + kBytes / 10 + 200000);
  EXPECT_GE(rx, kBytes);
  EXPECT_LE(rx, kBytes + kBytes / 10 + 200000);

  // cleanup leaves no namespace, link or qdisc behind (the links and qdiscs
  // lived in the namespaces; the caller's namespace never had any).
  auto r = Script({"cleanup", "--prefix", tb.name});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(NetnsWithPrefix(tb.name + "-"), std::vector<std::string>{});
  EXPECT_EQ(CallerNamespaceState(), caller_before);
}

#if HAVE_HYBRID
std::string ExpectedChecksum(const std::vector<std::string>& flags) {
  hybrid::Config c;
  std::string error;
  EXPECT_TRUE(hybrid::ParseArgs(flags, &c, &error)) << error;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(hybrid::ComputeExpected(c).checksum));
  return buf;
}

TEST_F(TestbedNet, HybridExampleAcrossTwoHostsOfTwoRanks) {
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--rate", "1gbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  struct Variant {
    std::vector<std::string> model, schedule;
  };
  const std::vector<Variant> variants = {
      {{"--preset", "tiny", "--stages", "2", "--replicas", "2"}, {"--schedule", "1f1b", "--order", "dp-inner"}},
      {{"--preset", "tiny", "--stages", "2", "--replicas", "2"}, {"--schedule", "2bw", "--order", "pp-inner"}},
      {{"--preset", "tiny", "--embedding", "--stages", "1", "--replicas", "2"}, {"--schedule", "2bw"}},
  };
  for (const Variant& v : variants) {
    std::vector<std::string> cmd = {HYBRID_BIN, "--timeout", "80"};
    cmd.insert(cmd.end(), v.model.begin(), v.model.end());
    cmd.insert(cmd.end(), v.schedule.begin(), v.schedule.end());
    RunOutcome o = Run(tb, {"--ranks-per-host", "2", "--timeout", "90", "--env",
                            std::string("NCCL_NET_PLUGIN=") + NET_PLUGIN},
                       cmd);
    const std::string what = v.model[3] + " " + v.schedule[1];
    ASSERT_EQ(o.process.exit_code, 0) << what << "\n" << o.process.err;
    ASSERT_FALSE(o.rank_out.empty());
    std::smatch m;
    static const std::regex kChecksum("RESULT .*\"checksum\":\"([0-9a-f]{16})\"");
    ASSERT_TRUE(std::regex_search(o.rank_out[0], m, kChecksum)) << what << ": " << o.rank_out[0];
    EXPECT_EQ(m[1].str(), ExpectedChecksum(v.model)) << what;
  }
}

// With the shim preloaded, every mode and policy must give the same bytes.
TEST_F(TestbedNet, HybridExampleUnderEveryTriraceMode) {
  const std::string shim = SHIM_PATH;
  if (shim.empty() || !std::filesystem::exists(shim)) {
    GTEST_SKIP() << "libtrirace.so is not built (" << (shim.empty() ? "no interpose module" : shim) << ")";
  }
  Testbed tb;
  UpOrSkip({"--hosts", "2", "--rate", "1gbit"}, &tb);
  if (IsSkipped() || HasFailure()) return;
  const std::vector<std::string> model = {"--preset", "tiny", "--stages", "2", "--replicas", "2",
                                          "--schedule", "2bw", "--order", "pp-inner"};
  const std::string expected = ExpectedChecksum(model);
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"off", "trirace"}, {"observe", "trirace"}, {"schedule", "fifo"},
      {"schedule", "priority"}, {"schedule", "trirace"}};
  for (const auto& [mode, policy] : modes) {
    std::vector<std::string> cmd = {HYBRID_BIN, "--timeout", "80"};
    cmd.insert(cmd.end(), model.begin(), model.end());
    RunOutcome o = Run(tb, {"--ranks-per-host", "2", "--timeout", "90",
                            "--env", std::string("NCCL_NET_PLUGIN=") + NET_PLUGIN,
                            "--env", "LD_PRELOAD=" + shim, "--env", "TRIRACE_MODE=" + mode,
                            "--env", "TRIRACE_POLICY=" + policy},
                       cmd);
    const std::string what = "TRIRACE_MODE=" + mode + " TRIRACE_POLICY=" + policy;
    ASSERT_EQ(o.process.exit_code, 0) << what << "\n" << o.process.err;
    ASSERT_FALSE(o.rank_out.empty());
    std::smatch m;
    static const std::regex kResult("RESULT .*\"checksum\":\"([0-9a-f]{16})\".*\"shim\":(true|false)");
    ASSERT_TRUE(std::regex_search(o.rank_out[0], m, kResult)) << what << ": " << o.rank_out[0];
    EXPECT_EQ(m[1].str(), expected) << what;
    EXPECT_EQ(m[2].str(), "true") << what << ": the example did not see the shim";
  }
}

// CI's short end-to-end repetition of the contention preset: a run of the
// benchmark driver, not a timed assertion.
TEST(TestbedE2E, OneShortRepetitionOfContention) {
  const std::string out = testing_support::MakeTempDir("testbed-e2e");
  auto r = testing_support::RunProcess(
      {E2E_DRIVER, "--build", BUILD_DIR, "--out", out, "--preset", "contention", "--reps", "1", "--modes",
       "none,off,trirace", "--variant", "trirace-nocp=trirace,TRIRACE_NET_CLASS_PRIORITY=off", "--",
       "--iterations", "3", "--warmup", "1", "--micro-batches", "4"},
      {}, {}, 170000);
  std::filesystem::remove_all(out);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("contention     checksum: every run = reference")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("meas/bnd"));
  EXPECT_THAT(r.out, HasSubstr("meas/idl"));
  // A --variant runs in every repetition beside the modes, under its label.
  EXPECT_THAT(r.out, HasSubstr("contention     trirace-nocp"));
}

// The 2-rail presets: a data-parallel and a pipeline job on two NICs per
// host, on separate rails and on one; each job is a row with its own
// reference checksum (a run, not a timed assertion).
TEST(TestbedE2E, OneShortRepetitionOfTheRailsPresets) {
  const std::string out = testing_support::MakeTempDir("testbed-e2e-rails");
  auto r = testing_support::RunProcess({E2E_DRIVER, "--build", BUILD_DIR, "--out", out, "--preset", "rails-split",
                                        "--preset", "rails-shared", "--reps", "1", "--modes", "off,trirace", "--",
                                        "--iterations", "3", "--warmup", "1", "--micro-batches", "4"},
                                       {}, {}, 170000);
  std::filesystem::remove_all(out);
  ASSERT_FALSE(r.timed_out);
  if (r.err.find("left out on loopback") != std::string::npos) GTEST_SKIP() << "no test bed here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* row : {"rails-split/dp", "rails-split/pp", "rails-shared/dp", "rails-shared/pp"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string(row) + " checksum: every run = reference")) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr(std::string(row) + " trirace"));
  }
}
#endif

}  // namespace
}  // namespace trirace::testbed
