// The NVLink monitor over the fake libnvidia-ml (fake_nvml.cc): per GPU the
// sum over its active links, in bytes, under the device name OpLinks maps;
// GPUs without active links left out; clear errors otherwise.
#include "topology/monitors/nvlink_counters.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/topology/fake_library.h"

namespace trirace::topo {
namespace {

using ::testing::HasSubstr;

constexpr int kScenarioGpus = 0, kScenarioInitFails = 2, kScenarioNoCounters = 4;

class NvlinkCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.ok()) << fake_.error();
    fake_.SetScenario("fake_nvml_set_scenario", kScenarioGpus);
  }
  void TearDown() override { fake_.SetScenario("fake_nvml_set_scenario", kScenarioGpus); }
  FakeLibrary fake_{FAKE_NVML};
};

TEST_F(NvlinkCountersTest, SumsEachGpusActiveLinksInBytes) {
  ManualClock clock(42);
  // 07:00.0 has links 0 and 1 active (2 inactive), 4e:00.0 links 0..3; the
  // model's bus ids may be written in any case and domain width.
  auto reader = OpenNvlinkCountersReader({"07:00.0", "0000:4E:00.0"}, FAKE_NVML, &clock);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->name(), "nvml-nvlink");
  const auto before = (*reader)->Read();
  ASSERT_TRUE(before.ok()) << before.status();
  fake_.Call("fake_nvml_add_traffic", 100ULL);  // KiB per link sent, twice that received
  const auto after = (*reader)->Read();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->time_ns, 42);
  ASSERT_EQ(after->devices.size(), 2u);
  EXPECT_EQ(after->devices[0].device, "nvlink:0000:07:00.0");
  EXPECT_EQ(after->devices[0].tx_bytes - before->devices[0].tx_bytes, 2u * 100 * 1024);
  EXPECT_EQ(after->devices[0].rx_bytes - before->devices[0].rx_bytes, 2u * 200 * 1024);
  EXPECT_EQ(after->devices[1].device, NvlinkDeviceName("4e:00.0"));
  EXPECT_EQ(after->devices[1].tx_bytes - before->devices[1].tx_bytes, 4u * 100 * 1024);
  EXPECT_FALSE(after->devices[1].has_ours);
  EXPECT_EQ(fake_.Count("fake_nvml_sessions"), 1) << "one NVML session for the reader's life";
  reader->reset();
  EXPECT_EQ(fake_.Count("fake_nvml_sessions"), 0);
}

TEST_F(NvlinkCountersTest, GpusWithoutActiveLinksOrUnknownToNvmlAreLeftOut) {
  auto reader = OpenNvlinkCountersReader({"0000:0f:00.0", "0000:99:00.0"}, FAKE_NVML);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const auto snap = (*reader)->Read();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->devices.size(), 1u);
  EXPECT_EQ(snap->devices[0].device, "nvlink:0000:0f:00.0");
  const auto none = OpenNvlinkCountersReader({"0000:99:00.0"}, FAKE_NVML);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("no active NVLink on GPU(s) 0000:99:00.0 (NVML lists 4 GPU(s))"));
}

TEST_F(NvlinkCountersTest, FailuresSayWhich) {
  auto missing = OpenNvlinkCountersReader({"0000:07:00.0"}, "/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "/nonexistent/libnvidia-ml.so.1 not found");
  fake_.SetScenario("fake_nvml_set_scenario", kScenarioInitFails);
  auto init = OpenNvlinkCountersReader({"0000:07:00.0"}, FAKE_NVML);
  ASSERT_FALSE(init.ok());
  EXPECT_THAT(init.status().message(), HasSubstr("nvmlInit_v2 failed: Driver Not Loaded (9)"));
  fake_.SetScenario("fake_nvml_set_scenario", kScenarioNoCounters);
  auto counters = OpenNvlinkCountersReader({"0000:07:00.0"}, FAKE_NVML);
  ASSERT_FALSE(counters.ok());
  EXPECT_EQ(counters.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(counters.status().message(), HasSubstr("nvlink:0000:07:00.0 link 0 field 138: "));
  EXPECT_EQ(fake_.Count("fake_nvml_sessions"), 0) << "a reader that failed to open leaves no session";
}

}  // namespace
}  // namespace trirace::topo
