// LinkSpec: a link as the engine registers it. Which links exist, and which
// ones an operation crosses, is the topology's business
// (topology/system_links.h, the one owner of link ids); the scheduler keeps
// the ids, the specs and the link state (link_table.h).
#ifndef TRIRACE_SCHEDULER_LINK_SPEC_H_
#define TRIRACE_SCHEDULER_LINK_SPEC_H_

#include <string>

namespace trirace::sched {

struct LinkSpec {
  std::string name{};               // e.g. "nic-tx:node0/mlx5_0"
  double capacity_bytes_per_s = 0;  // 0 = unknown
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_LINK_SPEC_H_
