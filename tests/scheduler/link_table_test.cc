// LinkTable: per-link charges by class and the foreign-traffic estimate.
#include "scheduler/link_table.h"

#include <gtest/gtest.h>

namespace trirace::sched {
namespace {

Task DenseTaskOn(std::vector<LinkId> links, uint64_t bytes) {
  Task t;
  t.spec.traffic_class = TrafficClass::kDense;
  t.spec.links = std::move(links);
  t.spec.bytes = bytes;
  return t;
}

TEST(LinkTableTest, ChargesEachLinkOfTheTaskByClassAndSkipsUnknownLinks) {
  LinkTable table;
  EXPECT_EQ(table.Add({"eth0", 1e9}), 0u);
  EXPECT_EQ(table.Add({"eth1", 2e9}), 1u);
  const Task t = DenseTaskOn({0, 1, 7}, 100);
  table.Account(t, 1, 0, 0);
  table.Account(t, -1, 1, 100);
  std::span<const LinkState> links = table.Snapshot();
  ASSERT_EQ(links.size(), 2u);
  const int dense = ClassIndex(TrafficClass::kDense);
  for (const LinkState& l : links) {
    EXPECT_EQ(l.pending[dense], 0u);
    EXPECT_EQ(l.running[dense], 1u);
    EXPECT_EQ(l.inflight_bytes[dense], 100u);
  }
  EXPECT_EQ(links[1].capacity_bytes_per_s, 2e9);
  EXPECT_EQ(table.inflight()[dense], 100u) << "counted once, not per link";
}

TEST(LinkTableTest, ForeignTrafficIsMeasuredMinusOursOrAllOfItOnAnIdleLink) {
  LinkTable table;
  table.Add({"eth0", 1e9});
  table.ApplyRate(0, 500, 200, 10);
  EXPECT_EQ(table.Snapshot()[0].foreign_bytes_per_s, 300) << "ours known";
  EXPECT_EQ(table.Snapshot()[0].occupancy_ns, 10);
  table.ApplyRate(0, 400, -1, 20);
  EXPECT_EQ(table.Snapshot()[0].foreign_bytes_per_s, 400) << "ours unknown, none of ours ran: all foreign";
  const Task t = DenseTaskOn({0}, 100);
  table.Account(t, 0, 1, 100);
  table.ApplyRate(0, 900, -1, 30);
  EXPECT_EQ(table.Snapshot()[0].foreign_bytes_per_s, 400) << "ours ran and is unknown: keep the last estimate";
  EXPECT_EQ(table.Snapshot()[0].measured_bytes_per_s, 900);
  table.ApplyRate(7, 1, 1, 40);  // unknown link: ignored
}

TEST(LinkTableTest, OtherProcessesUrgentBytesAreTheLastSamplesGauge) {
  LinkTable table;
  table.Add({"eth0", 1e9});
  EXPECT_EQ(table.Snapshot()[0].foreign_urgent_bytes, -1) << "unknown before a sample";
  table.ApplyRate(0, 500, 200, 10, 4096);
  EXPECT_EQ(table.Snapshot()[0].foreign_urgent_bytes, 4096);
  table.ApplyRate(0, 500, 200, 20, 0);
  EXPECT_EQ(table.Snapshot()[0].foreign_urgent_bytes, 0) << "a gauge, not a sum";
  table.ApplyRate(0, 500, 200, 30);
  EXPECT_EQ(table.Snapshot()[0].foreign_urgent_bytes, -1) << "a source that cannot tell";
}

}  // namespace
}  // namespace trirace::sched
