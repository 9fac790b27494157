// trirace: the 3-D policy. P2P is never held, SPARSE goes ahead of DENSE,
// DENSE chunks fill the gaps the other classes leave on each link.
//
// Rules, applied on every pass in this order. Each is tagged [Rn] at the
// line of trirace_policy.cc that implements it; tests/scheduler/
// trirace_policy_test.cc has one test per rule that fails without it.
//
//   [R1] P2P is never held: a gated P2P task is released on the first pass
//        (reason p2p). (The launcher normally does not gate P2P at all.)
//   [R2] OTHER (unclassified) traffic is not held either (other-class):
//        holding what we cannot classify risks stalling a critical path.
//   [R3] SPARSE ahead of DENSE: SPARSE is released on the first pass
//        (sparse), and while it is held or running on a link it counts as
//        higher-class activity there, which limits DENSE to the credit
//        ([R5]).
//   [R4] DENSE into gaps: a DENSE task may go when, on every link it
//        crosses, no P2P/SPARSE/OTHER task is running or held, and the
//        link's DENSE bytes in flight plus the task's stay within the
//        link's window (dense-gap). A task larger than the window goes
//        alone when no DENSE is in flight there. A task that crosses no
//        modelled link is always in a gap.
//   [R5] Credit: on a link where a higher class is active, DENSE may still
//        go while the link's DENSE bytes in flight plus the task's stay
//        within the link's credit (dense-credit). A credit of 0 disables it.
//   [R11] Limits in wire time: a link's window and credit are
//        dense_window_ns (TRIRACE_DENSE_WINDOW_US) and dense_credit_ns
//        (TRIRACE_DENSE_CREDIT_US) of wire time at the link's capacity, so
//        the same defaults hold DENSE back by the same milliseconds on a
//        300 Mbit/s link and on a 400 Gbit/s one. A non-zero
//        dense_window_bytes / dense_credit_bytes (TRIRACE_DENSE_*_BYTES)
//        is used on every link instead; a link of unknown capacity uses
//        kFallbackWindowBytes / kFallbackCreditBytes.
//   [R6] Deadline: a DENSE task whose deadline is within deadline_slack_ns
//        (TRIRACE_DEADLINE_SLACK_US) is released whatever the links say
//        (deadline). The deadline is the task's explicit hint if it has one;
//        else, from its tag's iteration: a task of an iteration older than
//        the one in progress is overdue (the next step already began);
//        a task of the current iteration is due at iteration start + the
//        smoothed iteration period, when the engine knows a period.
//   [R7] Among DENSE, front layers first: candidates are tried in order of
//        tag layer (0 first, unset last), then tag priority (larger first),
//        then submission order; a candidate that does not fit does not stop
//        later, smaller ones on other links. Only comm heads are candidates
//        (policy.h).
//   [R8] Max hold: any task held for the hold bound is released
//        (max-hold): max_hold_ns when set, else the engine's bound
//        (engine.h: TRIRACE_MAX_HOLD_US or TRIRACE_MAX_HOLD_FRACTION of the
//        iteration period, whichever is longer). The engine enforces it for
//        every policy; this rule makes the policy itself correct in
//        isolation and schedules its wake-up.
//   [R9] Foreign-occupancy headroom: on a link with a fresh occupancy
//        sample (younger than occupancy_max_age_ns) and a known capacity,
//        DENSE keeps foreign_headroom (TRIRACE_FOREIGN_HEADROOM, a fraction
//        of capacity) free beyond the measured foreign traffic: with
//        free = 1 - headroom - foreign/capacity, DENSE does not go at all
//        when free <= 0, and otherwise its window and credit are scaled by
//        free / (1 - headroom).
//   [R10] Wire class priority: when the net plugin's class priority is on
//        (TRIRACE_NET_CLASS_PRIORITY; wire_class_priority), P2P and SPARSE
//        leave the NIC ahead of DENSE packet by packet, so DENSE cannot
//        queue them behind it and holding it back only delays it:
//        higher-class activity neither limits DENSE to the credit ([R5])
//        nor closes a gap ([R4]); the window still applies, to the DENSE
//        of other comms only: the task's own comm runs its earlier DENSE
//        first on its stream whatever the gate says, and a framework
//        queues step i's all-reduce while step i - 1's is still queued, so
//        counting it would hold each all-reduce to the hold bound.
//        (Without class priority the comm's own DENSE counts: the gap
//        after each chunk is where P2P passes.) The exemption never lets a
//        comm pass a candidate that [R7] put ahead of it and that was held
//        on a shared link in the same pass; a comm's queued DENSE may all
//        go while no other comm's waits, and another comm's DENSE that
//        arrives later then waits behind it as behind any DENSE in flight
//        (at most the hold bound).
//   [R12] Online tuning: each link's window and credit are multiplied by
//        the engine's tuner factors (LinkState::window_scale /
//        credit_scale; window_tuner.h, TRIRACE_TUNE), 1 when tuning is off.
//   [R13] Other processes' urgent traffic: another process of the job on
//        this host sending P2P or SPARSE through the link's NIC (the net
//        plugin's per-process class gauges, LinkState::foreign_urgent_bytes
//        > 0 at a sample younger than urgent_max_age_ns) counts as
//        higher-class activity on the link for [R4] and [R5], as this
//        process's own P2P/SPARSE does: an embedding rank's all-to-all
//        limits the DENSE of a pipeline rank that shares its NIC to the
//        credit. Not under [R10] (the wire orders the classes itself).
//        The gauge also carries the other processes' DENSE where this
//        process holds a later pipeline stage of its host than another
//        ([R14], interpose/network/front_stage.h), so DENSE yields to the front
//        stage's on a link without traffic classes.
//
// Thread safety: see policy.h.
#ifndef TRIRACE_SCHEDULER_TRIRACE_POLICY_H_
#define TRIRACE_SCHEDULER_TRIRACE_POLICY_H_

#include <cstdint>
#include <vector>

#include "scheduler/policy.h"

namespace trirace::sched {

struct TriracePolicyConfig {
  int64_t dense_window_ns = 7'000'000;  // [R4], [R11]
  int64_t dense_credit_ns = 2'000'000;  // [R5], [R11]
  uint64_t dense_window_bytes = 0;      // [R11]: non-zero replaces dense_window_ns on every link
  uint64_t dense_credit_bytes = 0;      // [R11]: non-zero replaces dense_credit_ns on every link
  int64_t deadline_slack_ns = 1'000'000;      // [R6]
  int64_t max_hold_ns = 0;                    // [R8]; 0 = the engine's bound
  double foreign_headroom = 0.1;              // [R9], in [0, 1]
  int64_t occupancy_max_age_ns = 100'000'000; // [R9]: older samples are ignored
  // [R13]: an in-flight gauge ages fast (a 256 KiB message is 7 ms at
  // 300 Mbit/s, 5 us at 400 Gbit/s): a few of the engine's samples
  // (FromParams: UrgentMaxAgeNs(TRIRACE_OCCUPANCY_PERIOD_US), at most
  // occupancy_max_age_ns).
  int64_t urgent_max_age_ns = kMinUrgentMaxAgeNs;
  bool wire_class_priority = false;           // [R10]

  // From TRIRACE_DENSE_WINDOW_US / _BYTES, TRIRACE_DENSE_CREDIT_US / _BYTES,
  // TRIRACE_DEADLINE_SLACK_US, TRIRACE_FOREIGN_HEADROOM, and
  // NetClassPriorityEnabled() for wire_class_priority. The hold bound is
  // the engine's (max_hold_ns stays 0).
  static TriracePolicyConfig FromParams();

  // [R13] How old a gauge may be at a sampling period of
  // `occupancy_period_ns`: 2.5 periods, at least kMinUrgentMaxAgeNs.
  static constexpr int64_t kMinUrgentMaxAgeNs = 5'000'000;
  static int64_t UrgentMaxAgeNs(int64_t occupancy_period_ns);

  // [R11] A link's window and credit in bytes.
  static constexpr uint64_t kFallbackWindowBytes = 16ull << 20;
  static constexpr uint64_t kFallbackCreditBytes = 4ull << 20;
  uint64_t WindowBytes(double capacity_bytes_per_s) const;
  uint64_t CreditBytes(double capacity_bytes_per_s) const;
};


class TriracePolicy final : public Policy {
 public:
  explicit TriracePolicy(TriracePolicyConfig config = {}) : config_(config) {}
  std::string_view name() const override { return "trirace"; }
  void Decide(const SchedulerView& view, Decision* out) override;

  // The deadline [R6] uses for `task`, kNeverNs if none.
  static int64_t EffectiveDeadlineNs(const Task& task, const SchedulerView& view);

 private:
  // True when `task` fits on all its links now; sets *credit when a higher
  // class is active on any of them.
  bool DenseFits(const Task& task, const SchedulerView& view, bool* credit) const;

  TriracePolicyConfig config_;
  std::vector<const Task*> candidates_;   // reused between passes
  std::vector<uint64_t> released_dense_;  // per link: DENSE bytes released this pass
  std::vector<uint8_t> dense_held_;       // per link: a candidate ahead by [R7] was held this pass
};

}  // namespace trirace::sched

#endif  // TRIRACE_SCHEDULER_TRIRACE_POLICY_H_
