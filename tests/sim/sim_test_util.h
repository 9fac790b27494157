// Helpers shared by the simulator's tests: test-bed clusters with exact
// figures (no latency unless asked), and running one mode.
#ifndef TRIRACE_TESTS_SIM_SIM_TEST_UTIL_H_
#define TRIRACE_TESTS_SIM_SIM_TEST_UTIL_H_

#include <string>

#include "gtest/gtest.h"
#include "sim/cluster/cluster.h"
#include "sim/run/simulation.h"

namespace trirace::sim::testing {

// `hosts` test-bed hosts of `per_host` ranks at `gbps`, no token bucket,
// no latency, full rates: every time in a test can be worked out by hand.
inline Cluster ExactBed(int hosts, int per_host, double gbps = 1) {
  ClusterOptions o;
  o.hosts = hosts;
  o.ranks_per_host = per_host;
  o.gbps = gbps;
  absl::StatusOr<Cluster> c = MakeCluster("testbed", o);
  EXPECT_TRUE(c.ok()) << c.status();
  c->burst_bytes = 0;
  c->nic_efficiency = 1;
  c->compute_scale = 1;
  c->net_latency_ns = 0;
  c->local_latency_ns = 0;
  return *c;
}

inline ModeResult RunMode(const Cluster& c, const Workload& w, Mode m) {
  SimOptions o;
  o.mode = m;
  absl::StatusOr<ModeResult> r = Simulate(c, w, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ModeResult{};
}

}  // namespace trirace::sim::testing

#endif  // TRIRACE_TESTS_SIM_SIM_TEST_UTIL_H_
