// Whether a host's queues honour the class marks (common/qdisc.h): the
// verdict on `tc qdisc show` dumps of the hosts TriRace meets, the parser's
// errors, and the netlink listing against tc's own view of this host.
#include "common/qdisc.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace {
namespace {

using ::testing::HasSubstr;

struct HostCase {
  std::string name;
  std::string tc_output;
  std::vector<std::string> devices;
  bool honoured;
  std::string why;
};

class QdiscVerdictTest : public ::testing::TestWithParam<HostCase> {};

TEST_P(QdiscVerdictTest, JudgesTheDevicesAJobSendsThrough) {
  absl::StatusOr<std::vector<QdiscEntry>> q = ParseTcQdiscShow(GetParam().tc_output);
  ASSERT_TRUE(q.ok()) << q.status();
  const MarksFinding f = JudgeMarks(GetParam().devices, *q);
  EXPECT_EQ(f.honoured, GetParam().honoured) << f.why;
  EXPECT_EQ(f.why, GetParam().why);
}

INSTANTIATE_TEST_SUITE_P(
    Hosts, QdiscVerdictTest,
    ::testing::Values(
        // A systemd host's multi-queue NIC: mq with an fq_codel per queue.
        HostCase{"systemd_mq_fq_codel",
                 "qdisc noqueue 0: dev lo root refcnt 2\n"
                 "qdisc mq 0: dev eth0 root\n"
                 "qdisc fq_codel 0: dev eth0 parent :2 limit 10240p flows 1024 quantum 1514\n"
                 "qdisc fq_codel 0: dev eth0 parent :1 limit 10240p flows 1024 quantum 1514\n",
                 {"eth0"}, false, "eth0: fq_codel (under mq)"},
        // The kernel's own default without systemd.
        HostCase{"pfifo_fast", "qdisc pfifo_fast 0: dev eth0 root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1\n",
                 {"eth0"}, true, "eth0: pfifo_fast"},
        // The test bed's uplink with --prio: the shaper, a priority band under it.
        HostCase{"bed_prio",
                 "qdisc tbf 1: dev up0 root refcnt 2 rate 300Mbit burst 37500b lat 50ms\n"
                 "qdisc pfifo_fast 10: dev up0 parent 1:1 bands 3 priomap 1 2 2 2 1 2 0 0 1 1\n",
                 {"up0"}, true, "up0: pfifo_fast (under tbf)"},
        // And with --no-prio: the shaper's own fifo, no band.
        HostCase{"bed_no_prio", "qdisc tbf 1: dev up0 root refcnt 2 rate 300Mbit burst 37500b lat 50ms\n", {"up0"},
                 false, "up0: tbf"},
        HostCase{"fq", "qdisc fq 8001: dev eth0 root refcnt 2 limit 10000p\n", {"eth0"}, false, "eth0: fq"},
        HostCase{"mqprio", "qdisc mqprio 8001: dev eth0 root tc 2 map 0 0 0 0 0 0 1 1\n", {"eth0"}, true,
                 "eth0: mqprio"},
        // Loopback sends at once: nothing waits behind anything.
        HostCase{"loopback", "qdisc noqueue 0: dev lo root refcnt 2\n", {"lo"}, true, "lo: noqueue (sends at once)"},
        // One rail that ignores the marks is enough to turn them off.
        HostCase{"two_rails",
                 "qdisc pfifo_fast 0: dev eth0 root refcnt 2 bands 3\n"
                 "qdisc cake 8002: dev eth1 root refcnt 2 bandwidth unlimited\n",
                 {"eth0", "eth1"}, false, "eth0: pfifo_fast; eth1: cake"},
        HostCase{"device_missing", "qdisc pfifo_fast 0: dev eth0 root refcnt 2\n", {"eth0", "ib0"}, false,
                 "eth0: pfifo_fast; ib0: no qdisc listed"},
        HostCase{"no_device", "qdisc pfifo_fast 0: dev eth0 root refcnt 2\n", {}, false,
                 "no network device to judge"}),
    [](const ::testing::TestParamInfo<HostCase>& info) { return info.param.name; });

TEST(QdiscParseTest, ALineOfAnotherShapeIsNamedWithItsNumber) {
  absl::StatusOr<std::vector<QdiscEntry>> q =
      ParseTcQdiscShow("qdisc pfifo_fast 0: dev eth0 root refcnt 2\n\nclass htb 1:1 root rate 1Gbit\n");
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(), HasSubstr("line 3"));
  EXPECT_THAT(q.status().message(), HasSubstr("class htb 1:1"));
}

TEST(QdiscParseTest, RootAndChildrenAreToldApart) {
  absl::StatusOr<std::vector<QdiscEntry>> q = ParseTcQdiscShow(
      "qdisc mq 0: dev eth0 root\nqdisc fq_codel 0: dev eth0 parent :1 limit 10240p\n");
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->size(), 2u);
  EXPECT_TRUE((*q)[0].root);
  EXPECT_EQ((*q)[0].kind, "mq");
  EXPECT_FALSE((*q)[1].root);
  EXPECT_EQ((*q)[1].dev, "eth0");
}

TEST(QdiscListTest, NetlinkListsWhatTcShowsOnThisHost) {
  absl::StatusOr<std::vector<QdiscEntry>> listed = ListQdiscs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  bool lo = false;
  for (const QdiscEntry& q : *listed) lo = lo || (q.dev == "lo" && q.root && !q.kind.empty());
  EXPECT_TRUE(lo) << "loopback's root qdisc";
  // tc's view, where tc is installed (iproute2).
  std::unique_ptr<FILE, int (*)(FILE*)> tc(popen("tc qdisc show 2>/dev/null", "r"), pclose);
  std::string text;
  char buf[4096];
  while (tc != nullptr && fgets(buf, sizeof(buf), tc.get()) != nullptr) text += buf;
  if (text.empty()) GTEST_SKIP() << "no tc here to compare with";
  absl::StatusOr<std::vector<QdiscEntry>> shown = ParseTcQdiscShow(text);
  ASSERT_TRUE(shown.ok()) << shown.status();
  for (const QdiscEntry& s : *shown) {
    bool found = false;
    for (const QdiscEntry& l : *listed) found = found || (l.dev == s.dev && l.kind == s.kind && l.root == s.root);
    EXPECT_TRUE(found) << s.dev << " " << s.kind << (s.root ? " root" : "");
  }
}

}  // namespace
}  // namespace trirace
