// Occupancy readers, rates, and the engine's sampling of them.
#include <fcntl.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/env_guard.h"
#include "common/logging.h"
#include "scheduler/engine.h"
#include "support/fake_sysfs.h"

namespace trirace::sched {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;

using testing_support::FakeSysfs;

TEST(RateMeterTest, RatesFromTwoSnapshotsUseTheBusierDirection) {
  RateMeter meter;
  EXPECT_TRUE(meter.Update({0, {{.device = "eth0", .tx_bytes = 0, .rx_bytes = 0}}}).empty());
  auto rates = meter.Update({500 * kMs, {{.device = "eth0", .tx_bytes = 1000, .rx_bytes = 3000}}});
  ASSERT_EQ(rates.size(), 1u);
  EXPECT_DOUBLE_EQ(rates[0].bytes_per_s, 6000);
  EXPECT_EQ(rates[0].ours_bytes_per_s, -1);
  rates = meter.Update({1000 * kMs,
                        {{.device = "eth0", .tx_bytes = 2000, .rx_bytes = 3000, .has_ours = true,
                          .ours_tx_bytes = 10, .ours_rx_bytes = 0}}});
  EXPECT_TRUE(rates.empty()) << "the previous sample had no 'ours': restart";
  rates = meter.Update({2000 * kMs,
                        {{.device = "eth0", .tx_bytes = 4000, .rx_bytes = 3000, .has_ours = true,
                          .ours_tx_bytes = 510, .ours_rx_bytes = 0}}});
  ASSERT_EQ(rates.size(), 1u);
  EXPECT_DOUBLE_EQ(rates[0].bytes_per_s, 2000);
  EXPECT_DOUBLE_EQ(rates[0].ours_bytes_per_s, 500);
  EXPECT_TRUE(meter.Update({3000 * kMs, {{.device = "eth0", .tx_bytes = 1, .rx_bytes = 1}}}).empty())
      << "a counter that went backwards restarts";
}

TEST(RateMeterTest, ANewSeriesRestartsTheDeviceEvenWhenItsCountersGrew) {
  // A reader that switched source: the new counters happen to be larger
  // than the old ones, and the same shape, but cannot be subtracted.
  RateMeter meter;
  EXPECT_TRUE(meter.Update({0, {{.device = "eth0", .tx_bytes = 100, .rx_bytes = 0}}}).empty());
  EXPECT_EQ(meter.Update({10 * kMs, {{.device = "eth0", .tx_bytes = 200, .rx_bytes = 0}}}).size(), 1u);
  EXPECT_TRUE(meter.Update({20 * kMs, {{.device = "eth0", .tx_bytes = 900'000, .rx_bytes = 0, .series = 1}}}).empty())
      << "the first reading of a new series has nothing to subtract from";
  auto rates = meter.Update({30 * kMs, {{.device = "eth0", .tx_bytes = 901'000, .rx_bytes = 0, .series = 1}}});
  ASSERT_EQ(rates.size(), 1u);
  EXPECT_DOUBLE_EQ(rates[0].bytes_per_s, 100'000);
}

// Holds everything and records what the links looked like.
class RecordingPolicy : public Policy {
 public:
  std::string_view name() const override { return "recording"; }
  void Decide(const SchedulerView& view, Decision*) override {
    if (!view.links.empty()) last_link = view.links[0];
  }
  LinkState last_link;
};

// An engine on a manual clock, without its thread, holding DENSE for up to
// a second and sampling occupancy every 2 ms, with one link on veth0.
struct EngineOnVeth0 {
  static EngineOptions Options(const Clock* clock) {
    EngineOptions o;
    o.clock = clock;
    o.start_thread = false;
    o.max_hold_ns = 1000 * kMs;
    o.occupancy_period_ns = 2 * kMs;
    return o;
  }
  explicit EngineOnVeth0(std::unique_ptr<Policy> policy)
      : engine(std::move(policy), &opener, Options(&clock)),
        nic(engine.AddLink({.name = "nic:a", .capacity_bytes_per_s = 1e10})) {}

  ManualClock clock{0};
  struct : GateOpener {
    void OpenGate(const ReleasedTask&) override {}
  } opener;
  Engine engine;
  LinkId nic;
};

// A reader whose counters the test sets.
class SetReader final : public OccupancyReader {
 public:
  explicit SetReader(const Clock* clock) : clock_(clock) {}
  std::string_view name() const override { return "set"; }
  absl::StatusOr<OccupancySnapshot> Read() override {
    return OccupancySnapshot{.time_ns = clock_->NowNs(), .devices = {{.device = "veth0", .tx_bytes = *tx_}}};
  }
  std::shared_ptr<uint64_t> tx_ = std::make_shared<uint64_t>(0);

 private:
  const Clock* clock_;
};

TEST(EngineOccupancyTest, EngineSamplesTheReaderWhileTasksAreHeld) {
  auto owned = std::make_unique<RecordingPolicy>();
  RecordingPolicy* policy = owned.get();
  EngineOnVeth0 e(std::move(owned));
  Engine& engine = e.engine;
  ManualClock& clock = e.clock;
  const LinkId nic = e.nic;
  auto reader = std::make_unique<SetReader>(&clock);
  std::shared_ptr<uint64_t> tx = reader->tx_;
  engine.SetOccupancyReader(std::move(reader), {{"veth0", nic}});

  EXPECT_EQ(engine.Step(), kNeverNs) << "nothing held: no sampling";
  EXPECT_EQ(engine.stats().occupancy_samples, 0u);
  engine.Submit({.comm = 1, .traffic_class = TrafficClass::kDense, .bytes = 1, .links = {nic}});
  EXPECT_EQ(engine.Step(), 2 * kMs) << "first sample now, the next one a period later";
  *tx = 10'000'000;
  clock.SetNs(2 * kMs);
  engine.Step();
  EXPECT_EQ(engine.stats().occupancy_samples, 2u);
  EXPECT_DOUBLE_EQ(policy->last_link.measured_bytes_per_s, 5e9);
  EXPECT_DOUBLE_EQ(policy->last_link.foreign_bytes_per_s, 5e9) << "none of our tasks ran: all foreign";
  EXPECT_EQ(policy->last_link.occupancy_ns, 2 * kMs);
}

// A reader that fails every read with `code`.
class FailingReader final : public OccupancyReader {
 public:
  explicit FailingReader(absl::StatusCode code) : code_(code) {}
  std::string_view name() const override { return "failing"; }
  absl::StatusOr<OccupancySnapshot> Read() override { return absl::Status(code_, "no sample this time"); }

 private:
  absl::StatusCode code_;
};

std::vector<std::string>* g_warnings = nullptr;

void WarningSink(void*, trirace::LogLevel level, trirace::Subsys, const char*, int, absl::string_view msg) {
  if (level == trirace::LogLevel::kWARN && g_warnings != nullptr) g_warnings->emplace_back(msg);
}

// Reads with `code` for three periods; returns the WARN lines logged.
std::vector<std::string> WarningsForReaderError(absl::StatusCode code) {
  std::vector<std::string> warnings;
  g_warnings = &warnings;
  trirace::log::SetSink(WarningSink, nullptr);
  {
    EngineOnVeth0 e(std::make_unique<RecordingPolicy>());
    Engine& engine = e.engine;
    const LinkId nic = e.nic;
    engine.SetOccupancyReader(std::make_unique<FailingReader>(code), {{"veth0", nic}});
    engine.Submit({.comm = 1, .traffic_class = TrafficClass::kDense, .bytes = 1, .links = {nic}});
    for (int i = 0; i < 3; ++i) {
      e.clock.SetNs(i * 2 * kMs);
      engine.Step();
    }
    EXPECT_EQ(engine.stats().occupancy_samples, 3u) << "sampling goes on after a failed read";
  }
  trirace::log::SetSink(nullptr, nullptr);
  g_warnings = nullptr;
  return warnings;
}

TEST(EngineOccupancyTest, ATransientReaderMissIsQuietAndAFailureWarnsOnce) {
  EXPECT_THAT(WarningsForReaderError(absl::StatusCode::kUnavailable), ::testing::IsEmpty());
  std::vector<std::string> failed = WarningsForReaderError(absl::StatusCode::kInternal);
  ASSERT_EQ(failed.size(), 1u) << "one warning for three failed reads";
  EXPECT_THAT(failed[0], HasSubstr("occupancy reader failing"));
  EXPECT_THAT(failed[0], HasSubstr("no sample this time"));
}

}  // namespace
}  // namespace trirace::sched
