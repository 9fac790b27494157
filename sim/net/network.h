// The simulated network: links with a capacity per direction, and flows
// over them that share the links max-min fairly, in simulated time.
//
// A flow moves `bytes` at one rate over the links FlowSpec::links lists:
// one send, or one ring hop of one channel (sim/nccl/collectives.h starts
// each as its own flow). FlowLink::transfers lets a flow stand for several
// identical lockstep transfers that each take a fair share of a link; the
// simulator always passes 1.
//
// Sharing: progressive filling (max-min fairness) over the transfers. A
// link with class queues (NetLinkSpec::class_queues) serves lower
// FlowSpec::level values strictly first, with free preemption; a link
// without them serves every flow alike (one FIFO), whatever its level.
// Where every link of a connected set of flows has class queues, level 0
// is filled over the set, then level 1 takes what is left, and so on; where
// none has, every flow is one level. Where both kinds meet (the hosts'
// egress queues honour classes, the switches do not), the flows rise
// together as in progressive filling, except that a flow waits (at the rate
// it has) while a more urgent flow still rises at any class queue it
// crosses; every flow on a link that fills stops there. So a sender's
// egress queue serves P2P before DENSE, and a FIFO downlink shares the
// classes that reach it alike, at the rates their senders let through.
//
// Time: a flow starts moving `latency_ns` after Start (a message's fixed
// cost); flows with one `fifo_key` (a TCP connection: one sender, one
// receiver, one class) move one at a time in Start order, as a byte stream
// does. A flow whose links are all unlimited (capacity 0: inside a host
// where nothing is modelled) finishes as soon as it starts. Links may carry
// a token bucket as tc's tbf shapes the test bed's: `line` rate while the
// bucket holds tokens, the sustained rate once they are spent, back to
// line once a 9000-byte frame's worth has refilled.
//
// Cost: only the links and flows connected to a change (a flow started or
// finished, a bucket emptied or refilled) are re-solved, so disjoint
// traffic (pipeline sends on separate NICs) costs no global recompute.
//
// Counters: each link integrates the bytes it carried; callers may add
// counters (AddCounter) and point flow links at them, to know what one
// rank sent or received (an occupancy reader's "ours").
//
// Deterministic: the same calls give the same times, bit for bit. Not
// thread-safe; one simulation uses one Network from one thread.
#ifndef TRIRACE_SIM_NET_NETWORK_H_
#define TRIRACE_SIM_NET_NETWORK_H_

#include <cstdint>
#include <deque>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace trirace::sim {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

using LinkIx = int32_t;
using FlowIx = int32_t;

struct NetLinkSpec {
  std::string name;
  double bytes_per_s = 0;  // each direction is its own link; 0 = unlimited
  // Token bucket (0 = none): up to burst_bytes at line_bytes_per_s after an
  // idle spell, then bytes_per_s. A burst under one 9000-byte frame is none.
  double burst_bytes = 0;
  double line_bytes_per_s = 0;
  bool class_queues = false;  // serves lower FlowSpec::level first (strict priority)
};

// One link a flow crosses.
struct FlowLink {
  LinkIx link = 0;
  int32_t transfers = 1;  // how many of the flow's transfers cross it (>= 1)
  int32_t counter = -1;   // a counter (AddCounter) that integrates them; -1 none
};

struct FlowSpec {
  std::vector<FlowLink> links;  // no link twice
  double bytes = 0;             // per transfer
  int level = 0;                // class level, 0 served first where a link has class queues
  int64_t latency_ns = 0;
  int64_t fifo_key = -1;  // >= 0: one at a time per key, in Start order
  uint64_t cookie = 0;    // handed back when the flow finishes
};

struct NetworkStats {
  uint64_t flows = 0;          // started
  uint64_t solves = 0;         // re-solved components
  uint64_t bucket_changes = 0;
};

class Network {
 public:
  // Each link has class queues as its spec says.
  explicit Network(std::vector<NetLinkSpec> links);
  // Every link has class queues, or none has.
  Network(std::vector<NetLinkSpec> links, bool class_queues);

  // The burst `spec`'s token bucket allows, 0 where it has none (under one
  // frame, or a line rate no faster than the sustained one).
  static double EffectiveBurst(const NetLinkSpec& spec);

  // A new counter, 0 bytes; FlowLink::counter names it.
  int AddCounter();
  // Starts a flow at `now` (not before the last AdvanceTo). The index is
  // the flow's until it finishes; then it may name a later flow.
  FlowIx Start(FlowSpec spec, int64_t now);

  // The time of the next flow start or finish or bucket change (kNever if
  // none), after re-solving what changed.
  int64_t NextEventNs();
  // Moves to `t` (<= NextEventNs()) and handles what happens at t; appends
  // the cookies of flows that finished there, in a fixed order.
  void AdvanceTo(int64_t t, std::vector<uint64_t>* finished);

  // Bytes carried so far.
  double LinkBytes(LinkIx l) const;
  double CounterBytes(int counter) const;
  size_t link_count() const { return links_.size(); }
  const NetworkStats& stats() const { return stats_; }

 private:
  // A rate integrated over time: value(t) = value + rate * (t - since).
  struct Integrator {
    double value = 0, rate = 0;
    int64_t since = 0;
    double At(int64_t t) const { return value + rate * double(t - since) * 1e-9; }
    void SetRate(int64_t t, double r) {
      value = At(t);
      since = t;
      rate = r;
    }
  };
  struct Link {
    NetLinkSpec spec;
    std::vector<FlowIx> active;  // flows moving on it
    double used = 0;             // bytes/s, from the last solve
    Integrator bytes;
    // Token bucket.
    double tokens = 0;
    bool at_line = false;
    int64_t tokens_since = 0;
    uint32_t version = 0;  // of its bucket event
    uint32_t mark = 0;     // solve epoch
    double rem = 0;        // solve scratch: capacity left
    int64_t users = 0;     // solve scratch: unfrozen transfers
    int top_level = 0;     // solve scratch: the most urgent level still growing
  };
  enum class FlowState : uint8_t { kWaiting, kActive, kDone };
  struct Flow {
    FlowSpec spec;
    FlowState state = FlowState::kWaiting;
    int64_t start_ns = 0;  // Start + latency
    bool queued_head = true;  // first of its fifo key (or no key)
    double left = 0;          // bytes per transfer
    double rate = 0;          // bytes/s per transfer
    bool unlimited = false;   // crosses no limited link
    bool on_links = false;    // in its links' active lists
    int64_t since = 0;        // `left` is at this time
    uint32_t version = 0;     // of its finish event
    uint32_t mark = 0;
    bool frozen = false;      // solve scratch
  };
  enum class EventKind : uint8_t { kStart, kFinish, kBucket };
  struct Event {
    int64_t t;
    uint64_t seq;
    EventKind kind;
    int32_t id;
    uint32_t version;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  double Capacity(const Link& l) const;
  void Push(int64_t t, EventKind kind, int32_t id, uint32_t version);
  void Activate(FlowIx f);
  void Finish(FlowIx f, std::vector<uint64_t>* finished);
  void SettleTokens(Link& l);
  void ScheduleBucket(LinkIx l);
  void MarkDirty(LinkIx l);
  void Solve();
  // Max-min over the component's flows, level by level with class queues
  // (by_level) or as one level.
  void SolveByLevel(int max_level, bool by_level);
  // Some links of the component have class queues and some have not.
  void SolveMixed();

  std::vector<Link> links_;
  std::vector<Flow> flows_;
  std::vector<FlowIx> free_;  // slots of finished flows
  std::vector<Integrator> counters_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  std::vector<LinkIx> dirty_;
  std::vector<FlowIx> unlimited_started_;  // flows to finish at once
  std::unordered_map<int64_t, std::deque<FlowIx>> fifo_;
  uint32_t epoch_ = 0;
  NetworkStats stats_;
  // Solve scratch, reused.
  std::vector<LinkIx> comp_links_;
  std::vector<FlowIx> comp_flows_;
  std::vector<double> used_scratch_;
  std::vector<FlowIx> mixed_growing_;
};

}  // namespace trirace::sim

#endif  // TRIRACE_SIM_NET_NETWORK_H_
