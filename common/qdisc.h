// Whether this host's queues honour the class marks the net plugin sets.
//
// The plugin marks each send for its traffic class with a socket priority
// (and DSCP). Only some queueing disciplines order packets by that
// priority: pfifo_fast and prio (bands from the priority map), mqprio,
// ets and taprio (traffic classes). The ones most hosts run (fq_codel,
// the default of systemd-based distributions, under mq on multi-queue
// NICs; fq; cake; a bare tbf or fifo) serve every class alike, so there
// the marks change nothing, and a scheduler that counts on them (the
// trirace policy's rule R10 in docs/scheduler.md) stops holding DENSE
// back for P2P that nothing lets pass. A device without a queue
// (noqueue: loopback, a veth left as created) sends at once: nothing waits
// behind anything there, so it is no reason to turn the marks off.
//
//   absl::StatusOr<std::vector<QdiscEntry>> q = ListQdiscs();          // netlink, this namespace
//   MarksFinding f = JudgeMarks({"eth0"}, *q);  // f.honoured, f.why: "eth0: fq_codel (under mq)"
//   HostMarksFinding();                         // the devices the TCP transport uses, once per process
//
// Thread safety: the functions are thread-safe; HostMarksFinding computes
// its answer once (the first caller) and returns the same object after.
#ifndef TRIRACE_COMMON_QDISC_H_
#define TRIRACE_COMMON_QDISC_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trirace {

// One queueing discipline of one device.
struct QdiscEntry {
  std::string dev;
  std::string kind;   // "fq_codel", "pfifo_fast", "mq", "noqueue", ...
  bool root = false;  // the device's root qdisc (else a child of a class)
};

// Every qdisc of every device in this network namespace, in the kernel's
// order (an RTM_GETQDISC dump over rtnetlink; no `tc` needed). The error
// names the step that failed and errno.
absl::StatusOr<std::vector<QdiscEntry>> ListQdiscs();

// The same from the text `tc qdisc show` prints: one line a qdisc,
// "qdisc KIND HANDLE: dev DEV root|parent P ...". A line of another shape
// is an error naming its number and text; blank lines are skipped.
absl::StatusOr<std::vector<QdiscEntry>> ParseTcQdiscShow(absl::string_view text);

// Whether `kind` orders packets by their socket priority.
bool OrdersByPriority(absl::string_view kind);

struct MarksFinding {
  // Every device judged orders by priority somewhere in its tree, or has
  // no queue; false when a device's queues ignore the marks, when a device
  // has no qdisc in the list, or when there is no device at all.
  bool honoured = false;
  // One clause a device, "eth0: pfifo_fast; eth1: fq_codel (under mq)",
  // or why nothing could be judged.
  std::string why;
};

// Judges the devices a job sends through by the qdiscs listed for them.
MarksFinding JudgeMarks(const std::vector<std::string>& devices, const std::vector<QdiscEntry>& qdiscs);

// The finding for the devices the net plugin's TCP transport would use
// here (SelectTransportInterfaces with InterfaceSpecText()), their qdiscs
// read by ListQdiscs. A failure to read them is a finding that the marks
// are not honoured, with the reason in `why`.
const MarksFinding& HostMarksFinding();

}  // namespace trirace

#endif  // TRIRACE_COMMON_QDISC_H_
