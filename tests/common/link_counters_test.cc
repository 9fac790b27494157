// CombineReaders: one occupancy reader over several, where a failing part
// costs only its own devices.
#include "common/link_counters.h"

#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace trirace {
namespace {

// A reader that answers what the test puts in `next`.
class ScriptedReader final : public OccupancyReader {
 public:
  ScriptedReader(std::string name, absl::StatusOr<OccupancySnapshot>* next) : name_(std::move(name)), next_(next) {}
  std::string_view name() const override { return name_; }
  absl::StatusOr<OccupancySnapshot> Read() override { return *next_; }

 private:
  std::string name_;
  absl::StatusOr<OccupancySnapshot>* next_;
};

OccupancySnapshot Snap(int64_t t, std::vector<std::pair<std::string, uint64_t>> devices) {
  OccupancySnapshot s;
  s.time_ns = t;
  for (auto& [name, tx] : devices) {
    DeviceCounters d;
    d.device = name;
    d.tx_bytes = tx;
    s.devices.push_back(d);
  }
  return s;
}

class CombineReadersTest : public ::testing::Test {
 protected:
  std::unique_ptr<OccupancyReader> Combined() {
    std::vector<std::unique_ptr<OccupancyReader>> parts;
    parts.push_back(std::make_unique<ScriptedReader>("sysfs", &nic_));
    parts.push_back(nullptr);
    parts.push_back(std::make_unique<ScriptedReader>("nvml-nvlink", &nvlink_));
    return CombineReaders(std::move(parts));
  }
  absl::StatusOr<OccupancySnapshot> nic_ = Snap(5, {{"eth0", 10}});
  absl::StatusOr<OccupancySnapshot> nvlink_ = Snap(6, {{"nvlink:0000:07:00.0", 20}, {"nvlink:0000:0f:00.0", 30}});
};

TEST_F(CombineReadersTest, HoldsEveryPartsDevicesUnderTheJoinedName) {
  std::unique_ptr<OccupancyReader> r = Combined();
  EXPECT_EQ(r->name(), "sysfs+nvml-nvlink");
  absl::StatusOr<OccupancySnapshot> s = r->Read();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->time_ns, 5);
  ASSERT_EQ(s->devices.size(), 3u);
  EXPECT_EQ(s->devices[0].device, "eth0");
  EXPECT_EQ(s->devices[1].device, "nvlink:0000:07:00.0");
  EXPECT_EQ(s->devices[2].tx_bytes, 30u);
}

TEST_F(CombineReadersTest, AFailingPartCostsOnlyItsOwnDevices) {
  std::unique_ptr<OccupancyReader> r = Combined();
  nvlink_ = absl::FailedPreconditionError("nvlink:0000:07:00.0 link 0: Not Supported (3)");
  for (int i = 0; i < 2; ++i) {  // again: still the NIC's devices
    absl::StatusOr<OccupancySnapshot> s = r->Read();
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->devices.size(), 1u);
    EXPECT_EQ(s->devices[0].device, "eth0");
  }
  nic_ = absl::UnavailableError("publisher mid-update");
  absl::StatusOr<OccupancySnapshot> s = r->Read();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsUnavailable(s.status())) << "every part failed: the first part's error";
}

TEST(CombineReadersAloneTest, OnePartIsThatPartAndNoneIsNull) {
  absl::StatusOr<OccupancySnapshot> next = Snap(1, {});
  auto only = std::make_unique<ScriptedReader>("sysfs", &next);
  OccupancyReader* raw = only.get();
  std::vector<std::unique_ptr<OccupancyReader>> parts;
  parts.push_back(std::move(only));
  parts.push_back(nullptr);
  EXPECT_EQ(CombineReaders(std::move(parts)).get(), raw);
  EXPECT_EQ(CombineReaders({}), nullptr);
}

}  // namespace
}  // namespace trirace
