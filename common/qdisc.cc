#include "common/qdisc.h"

#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/net_interfaces.h"

namespace trirace {
namespace {

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat("qdiscs: ", what, ": ", std::strerror(errno)));
}

// One RTM_NEWQDISC message as an entry; false for anything else.
bool ParseQdiscMessage(const nlmsghdr* h, QdiscEntry* out) {
  if (h->nlmsg_type != RTM_NEWQDISC || h->nlmsg_len < NLMSG_LENGTH(sizeof(tcmsg))) return false;
  const auto* tc = static_cast<const tcmsg*>(NLMSG_DATA(h));
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(static_cast<unsigned>(tc->tcm_ifindex), name) == nullptr) return false;  // gone meanwhile
  out->dev = name;
  out->root = tc->tcm_parent == TC_H_ROOT;
  out->kind.clear();
  int left = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(tcmsg)));
  for (const rtattr* a = reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(tc) + NLMSG_ALIGN(sizeof(tcmsg)));
       RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (a->rta_type != TCA_KIND) continue;
    const char* kind = static_cast<const char*>(RTA_DATA(a));
    out->kind.assign(kind, strnlen(kind, RTA_PAYLOAD(a)));
  }
  return !out->kind.empty();
}

}  // namespace

absl::StatusOr<std::vector<QdiscEntry>> ListQdiscs() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return Errno("socket(AF_NETLINK)");
  absl::Cleanup close_fd = [fd] { close(fd); };
  struct {
    nlmsghdr h;
    tcmsg tc;
  } request{};
  request.h.nlmsg_len = NLMSG_LENGTH(sizeof(tcmsg));
  request.h.nlmsg_type = RTM_GETQDISC;
  request.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.h.nlmsg_seq = 1;
  request.tc.tcm_family = AF_UNSPEC;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, &request, request.h.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
    return Errno("send RTM_GETQDISC");
  }
  std::vector<QdiscEntry> out;
  alignas(nlmsghdr) char buffer[32768];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("recv RTM_GETQDISC");
    if (n == 0) return absl::InternalError("qdiscs: the kernel closed the netlink socket mid-dump");
    // The messages of this datagram, each aligned (NLMSG_OK/NEXT's walk,
    // with unsigned sizes).
    const size_t size = static_cast<size_t>(n);
    for (size_t at = 0; at + sizeof(nlmsghdr) <= size;) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buffer + at);
      if (h->nlmsg_len < sizeof(nlmsghdr) || at + h->nlmsg_len > size) break;  // truncated
      at += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_type == NLMSG_DONE) return out;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        errno = -e->error;
        return Errno("RTM_GETQDISC");
      }
      QdiscEntry q;
      if (ParseQdiscMessage(h, &q)) out.push_back(std::move(q));
    }
  }
}

absl::StatusOr<std::vector<QdiscEntry>> ParseTcQdiscShow(absl::string_view text) {
  std::vector<QdiscEntry> out;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    // qdisc KIND HANDLE: dev DEV root|parent P ...
    if (words.size() < 6 || words[0] != "qdisc" || !absl::EndsWith(words[2], ":") || words[3] != "dev" ||
        (words[5] != "root" && words[5] != "parent")) {
      return absl::InvalidArgumentError(
          absl::StrCat("tc qdisc show, line ", number, ": '", line,
                       "': expected 'qdisc KIND HANDLE: dev DEV root|parent P ...'"));
    }
    out.push_back({std::string(words[4]), std::string(words[1]), words[5] == "root"});
  }
  return out;
}

bool OrdersByPriority(absl::string_view kind) {
  static const std::set<absl::string_view>* const kKinds =
      new std::set<absl::string_view>{"pfifo_fast", "prio", "mqprio", "ets", "taprio"};
  return kKinds->count(kind) > 0;
}

MarksFinding JudgeMarks(const std::vector<std::string>& devices, const std::vector<QdiscEntry>& qdiscs) {
  MarksFinding f;
  if (devices.empty()) {
    f.why = "no network device to judge";
    return f;
  }
  std::map<std::string, std::vector<const QdiscEntry*>> by_dev;
  for (const QdiscEntry& q : qdiscs) by_dev[q.dev].push_back(&q);
  f.honoured = true;
  std::vector<std::string> clauses;
  for (const std::string& dev : devices) {
    auto it = by_dev.find(dev);
    if (it == by_dev.end()) {
      f.honoured = false;
      clauses.push_back(absl::StrCat(dev, ": no qdisc listed"));
      continue;
    }
    std::string root;
    std::vector<std::string> ordering, others;
    bool no_queue = false;
    for (const QdiscEntry* q : it->second) {
      if (q->root) root = q->kind;
      if (q->kind == "noqueue") no_queue = true;
      (OrdersByPriority(q->kind) ? ordering : others).push_back(q->kind);
    }
    const bool ok = !ordering.empty() || (no_queue && others.size() == 1);
    f.honoured = f.honoured && ok;
    // Name the kind that decides: the ordering one, else the leaves that
    // ignore the marks, with the root they hang under.
    std::string clause = absl::StrCat(dev, ": ");
    if (!ordering.empty()) {
      absl::StrAppend(&clause, ordering.front(), root != ordering.front() && !root.empty() ? " (under " + root + ")" : "");
    } else if (no_queue) {
      absl::StrAppend(&clause, "noqueue (sends at once)");
    } else {
      std::vector<std::string> leaves;
      for (const std::string& k : others) {
        if (k != root && std::find(leaves.begin(), leaves.end(), k) == leaves.end()) leaves.push_back(k);
      }
      absl::StrAppend(&clause, leaves.empty() ? root : absl::StrJoin(leaves, ", "),
                      leaves.empty() || root.empty() ? "" : " (under " + root + ")");
    }
    clauses.push_back(std::move(clause));
  }
  f.why = absl::StrJoin(clauses, "; ");
  return f;
}

const MarksFinding& HostMarksFinding() {
  static const MarksFinding* const finding = [] {
    auto* f = new MarksFinding();
    absl::StatusOr<std::vector<NetInterface>> all = ListNetInterfaces();
    if (!all.ok()) {
      f->why = std::string(all.status().message());
      return f;
    }
    std::vector<std::string> devices;
    for (const NetInterface& n : SelectTransportInterfaces(*all, InterfaceSpec::Parse(InterfaceSpecText()))) {
      devices.push_back(n.name);
    }
    absl::StatusOr<std::vector<QdiscEntry>> qdiscs = ListQdiscs();
    if (!qdiscs.ok()) {
      f->why = std::string(qdiscs.status().message());
      return f;
    }
    *f = JudgeMarks(devices, *qdiscs);
    return f;
  }();
  return *finding;
}

}  // namespace trirace
