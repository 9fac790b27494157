// WindowTuner: adjusts each link's DENSE window and credit online, from
// what the engine measures on that link, within fixed bounds.
//
// The policy's limits are wire time (TRIRACE_DENSE_WINDOW_US / _CREDIT_US,
// [R11] in trirace_policy.h): right in milliseconds on any link rate, but
// how much DENSE a link can carry beside P2P without slowing it depends on
// what else queues there (the NIC's queues, TCP's buffers, a switch with or
// without priority queues, foreign jobs). ByteScheduler tuned its credit once
// per setup; AutoCCL tunes NCCL online under interference. The tuner does
// the latter for the two limits the policy holds DENSE with, one factor
// each per link, by additive increase and multiplicative decrease:
//
//   - Harm: P2P (and SPARSE) tasks that receive (TaskSpec::receives) and
//     ran while DENSE was in flight on the link are compared with those
//     that ran without it. Each sample is
//     the task's duration from its start on the stream (or its release when
//     the launcher cannot tell) to its completion, over its wire time plus
//     kLatencyFloorNs; a task faster than kMinCost of that did not wait
//     for the link at its rate (its data had arrived before it started, or
//     its peer is on the same host) and is no sample.
//     Durations also hold time spent waiting for the peer
//     (a recv posted before its send), which has nothing to do with the
//     link, so the tuner compares minima, as delay-based congestion control
//     does: the fastest P2P beside DENSE over an interval against the
//     fastest alone over the last kBaselineIntervals intervals, or against
//     its wire time when none ran alone (a link DENSE never leaves). When the
//     first exceeds the second by more than p2p_slowdown, the limit that let
//     DENSE onto the link over those samples is multiplied by `decrease`:
//     the credit if DENSE was released beside P2P (dense-credit), the
//     window if it was released into gaps (dense-gap), both if both. DENSE
//     that went for its deadline or the hold bound passed no limit, so
//     harm from it changes nothing.
//   - Room: when DENSE waited on the link for at least kHeldShare of the
//     interval while the link carried less than `utilisation` of its
//     capacity, the limit DENSE mostly waited on grows by `increase`: the
//     window when it waited in gaps, the credit when it waited beside
//     higher classes. What the link carried is, where an occupancy reader
//     samples the link, the measured traffic over the part of the interval
//     a sample younger than kFreshSampleNs covered, if that is at least half
//     of it (the engine samples while tasks are held, so samples cover the
//     time DENSE waits); else the share of the interval some task of ours
//     ran on it. The latter counts an op that waits for its peers as use,
//     so without a measurement a window only grows where our tasks leave
//     the link idle, which is the conservative side.
//   - Neither: nothing changes. Every factor stays in [min_scale, max_scale].
//
// A decision is taken at most once per interval_ns per link, and harm needs
// min_samples P2P samples beside DENSE (they accumulate across intervals
// until there are enough). Only window and credit change: the chunk size
// must be the same on every rank of a comm (NCCL's call order), and a
// per-rank measurement is not, so chunks are never tuned.
//
// The engine drives it under its lock: Observe() before every change of
// link state (it integrates how long DENSE waited and whether it was in
// flight), OnComplete() for every task that completes, Adjust() on each
// pass. Thread safety: none of its own.
#ifndef TRIRACE_SCHEDULER_WINDOW_TUNER_H_
#define TRIRACE_SCHEDULER_WINDOW_TUNER_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "scheduler/policy.h"
#include "scheduler/task.h"

namespace trirace::sched {

struct WindowTunerConfig {
  bool enabled = false;                // TRIRACE_TUNE
  int64_t interval_ns = 100'000'000;   // TRIRACE_TUNE_INTERVAL_US
  double p2p_slowdown = 1.25;          // TRIRACE_TUNE_P2P_SLOWDOWN: tolerated P2P slowdown beside DENSE
  double min_scale = 0.25;             // TRIRACE_TUNE_MIN_SCALE
  double max_scale = 4;                // TRIRACE_TUNE_MAX_SCALE
  double decrease = 0.7;               // multiplicative decrease on harm
  double increase = 0.25;              // additive increase on room
  double utilisation = 0.9;            // room only while the link's use is below this
  int min_samples = 3;                 // P2P samples beside DENSE needed to judge harm

  static WindowTunerConfig FromParams();
};

// What the tuner measured on one link over the decision's interval.
struct TuningEvidence {
  double p2p_slowdown = 0;  // fastest beside DENSE / fastest alone; 0 = not judged
  int samples = 0;          // P2P samples beside DENSE (judged, or gathered so far)
  int too_fast = 0;         // tasks dropped this interval as faster than the link
  bool baseline = false;    // judged against P2P alone (false: against wire time)
  double utilisation = 0;   // what the link carried / capacity (see Room above)
  double held_gap = 0;      // share of the interval DENSE waited with no higher class active
  double held_beside = 0;   // share of the interval DENSE waited beside a higher class
};

// One change of one link's factors (logged and traced by the engine's listener).
struct TuningChange {
  LinkId link = 0;
  std::string link_name;
  int64_t time_ns = 0;
  double window_scale = 1, credit_scale = 1;    // after
  double window_before = 1, credit_before = 1;  // before
  const char* why = "";                         // "p2p-slowed", "window-room", "credit-room"
  TuningEvidence evidence;
};

class WindowTuner {
 public:
  // P2P faster than this much above their wire time count as this fast (so
  // that tiny messages are not judged by their latency alone).
  static constexpr int64_t kLatencyFloorNs = 100'000;
  // Samples below this share of their wire time are dropped (see above).
  static constexpr double kMinCost = 0.8;
  // The "alone" baseline is the fastest P2P alone over this many intervals.
  static constexpr int kBaselineIntervals = 8;
  // DENSE must have waited this share of an interval for room to count.
  static constexpr double kHeldShare = 0.1;
  // An occupancy sample counts for link use while younger than this.
  static constexpr int64_t kFreshSampleNs = 20'000'000;

  explicit WindowTuner(WindowTunerConfig config = {}) : config_(config) {}
  bool enabled() const { return config_.enabled; }
  const WindowTunerConfig& config() const { return config_; }

  // Integrates the links' state from the previous call to `now`: `links`
  // is their state over that time (call before changing it).
  void Observe(int64_t now, std::span<const LinkState> links);
  // `task` completed at `now`; it started on the device at `started_ns`
  // (< 0: unknown, its release is used). `links` gives the capacities.
  void OnComplete(const Task& task, int64_t started_ns, int64_t now, std::span<const LinkState> links);
  // Decides for each link whose interval has run out; appends what changed.
  void Adjust(int64_t now, std::span<const LinkState> links, std::vector<TuningChange>* changes);

  // A link's current factors (1, 1 for links never tuned).
  double window_scale(LinkId id) const { return id < links_.size() ? links_[id].window_scale : 1; }
  double credit_scale(LinkId id) const { return id < links_.size() ? links_[id].credit_scale : 1; }

 private:
  struct PerLink {
    double window_scale = 1, credit_scale = 1;
    int64_t interval_start_ns = -1;
    int64_t held_gap_ns = 0, held_beside_ns = 0;
    int64_t busy_ns = 0;         // some task of ours ran on the link
    double measured_bytes = 0;   // occupancy rate integrated over fresh samples
    int64_t measured_ns = 0;     // time covered by fresh samples
    bool dense_inflight = false;
    int64_t dense_seen_ns = -1;  // last time DENSE was in flight
    // Since the last harm decision: P2P beside DENSE, and DENSE completed by
    // the limit that released it.
    double beside_min = 0;
    int beside_samples = 0;
    int too_fast = 0;  // this interval
    uint32_t dense_by_gap = 0, dense_by_credit = 0;
    // The fastest P2P alone, per interval (ring), and this interval's.
    std::array<double, kBaselineIntervals> alone_min{};
    int alone_next = 0;
    double alone_now = 0;
  };
  PerLink& At(LinkId id);
  // Decides one link (consuming its harm samples when judged); true if its
  // factors changed.
  bool Decide(PerLink& l, int64_t now, double capacity, TuningChange* change);

  WindowTunerConfig config_;
  std::vector<PerLink> links_;
  int64_t last_observe_ns_ = -1;
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_WINDOW_TUNER_H_
