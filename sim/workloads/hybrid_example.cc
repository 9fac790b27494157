#include "sim/workloads/hybrid_example.h"

#include <map>
#include <utility>

#include "model.h"
#include "schedule.h"

namespace trirace::sim {
namespace {

using hybrid::Action;
using hybrid::Config;
using hybrid::Schedule;
using hybrid::Step;

enum Stream { kCompute = 0, kDense = 1, kSparse = 2, kStreams = 3 };
// The trainer's events, each a kind and an index (iteration, bucket or slot).
enum class Ev { kDenseDone, kSparseDone, kBucketReady, kBucketDone, kRowsReady, kRowsFree, kGradsReady,
                kGradsFree, kIterationEnd };
int64_t Key(Ev e, int64_t index) { return (int64_t(e) << 40) | index; }

struct Comms {
  std::vector<int> dp;  // per stage (-1 for the embedding stage)
  std::vector<int> pp;  // per replica
  int sparse = -1;
};

// One rank's program, as trainer.cc issues it.
class RankBuilder {
 public:
  RankBuilder(const Config& c, const Comms& comms, int stage, int replica)
      : c_(c),
        comms_(comms),
        b_(kStreams),
        stage_(stage),
        replica_(replica),
        embedding_(hybrid::IsEmbeddingStage(c, stage)),
        last_(hybrid::IsLastStage(c, stage)),
        buckets_(hybrid::Buckets(c)) {
    bucket_of_layer_.assign(size_t(c.layers), 0);
    for (size_t k = 0; k < buckets_.size(); ++k) {
      for (int l : buckets_[k].layers) bucket_of_layer_[size_t(l)] = int(k);
    }
  }

  RankProgram Build() {
    for (const Action& a : hybrid::StageSchedule(c_, stage_)) Do(a);
    return b_.Take();
  }

 private:
  trirace_tag_t MicroBatchTag(int64_t g, trirace_phase_t phase, trirace_class_t cls) const {
    trirace_tag_t t = TRIRACE_TAG_INIT;
    t.stage = stage_;
    t.micro_batch = int32_t(g % c_.micro_batches);
    t.iteration = g / c_.micro_batches;
    t.phase = phase;
    t.traffic_class = cls;
    return t;
  }
  NcclCall P2PCall(bool send, int peer_stage, int64_t g, trirace_phase_t phase) const {
    NcclCall call;
    call.func = send ? NcclFunc::kSend : NcclFunc::kRecv;
    call.comm = comms_.pp[size_t(replica_)];
    call.peer = peer_stage;  // the pipeline comm's ranks are ordered by stage
    call.bytes = uint64_t(c_.act_elems()) * 4;
    call.traffic_class = TrafficClass::kP2P;
    call.tag = MicroBatchTag(g, phase, TRIRACE_CLASS_P2P);
    return call;
  }
  void P2P(std::vector<NcclCall> calls) { b_.Comm(kCompute, std::move(calls)); }

  void Do(const Action& a) {
    switch (a.step) {
      case Step::kIterationBegin: return IterationBegin(a.iteration);
      case Step::kRecvForward: return RecvForward(a.fwd);
      case Step::kForward: return Forward(a.fwd);
      case Step::kSendForward:
        if (!last_) P2P({P2PCall(true, stage_ + 1, a.fwd, TRIRACE_PHASE_FORWARD)});
        return;
      case Step::kSendForwardRecvBackward:
        if (!last_) {
          P2P({P2PCall(true, stage_ + 1, a.fwd, TRIRACE_PHASE_FORWARD),
               P2PCall(false, stage_ + 1, a.bwd, TRIRACE_PHASE_BACKWARD)});
        }
        return;
      case Step::kBackward: return embedding_ ? EmbeddingBackward(a.bwd) : DenseBackward(a.bwd);
      case Step::kSendBackwardRecvForward:
        if (stage_ == 0) return RecvForward(a.fwd);
        P2P({P2PCall(true, stage_ - 1, a.bwd, TRIRACE_PHASE_BACKWARD),
             P2PCall(false, stage_ - 1, a.fwd, TRIRACE_PHASE_FORWARD)});
        return;
      case Step::kRecvBackward:
        if (!last_) P2P({P2PCall(false, stage_ + 1, a.bwd, TRIRACE_PHASE_BACKWARD)});
        return;
      case Step::kSendBackward:
        if (stage_ > 0) P2P({P2PCall(true, stage_ - 1, a.bwd, TRIRACE_PHASE_BACKWARD)});
        return;
      case Step::kIterationEnd: return IterationEnd(a.iteration);
    }
  }

  Ev Done() const { return embedding_ ? Ev::kSparseDone : Ev::kDenseDone; }

  void IterationBegin(int it) {
    if (it == 0) b_.Stamp(kCompute, 0);
    // The host stays at most `lookahead` iterations ahead of the streams; an
    // iteration whose end this stage has not issued yet holds nothing back.
    const int back = it - 1 - c_.lookahead;
    if (back >= 0) b_.HostWait(Key(Ev::kIterationEnd, back));
    b_.IterationBegin(it);
    if (c_.schedule == Schedule::k2BW && it >= 2) b_.Wait(kCompute, Key(Done(), it - 2));
  }
  void IterationEnd(int it) {
    if (c_.schedule == Schedule::k1F1B) b_.Wait(kCompute, Key(Done(), it));
    b_.Stamp(kCompute, it + 1);
    b_.Record(kCompute, Key(Ev::kIterationEnd, it));
    b_.IterationEnd(it);
  }
  void RecvForward(int64_t g) {
    if (embedding_) return SparseForward(g);
    if (stage_ > 0) P2P({P2PCall(false, stage_ - 1, g, TRIRACE_PHASE_FORWARD)});
  }
  NcclCall SparseCall(NcclFunc func, uint64_t bytes, int64_t g, trirace_phase_t phase, bool integer) const {
    NcclCall call;
    call.func = func;
    call.comm = comms_.sparse;
    call.bytes = bytes;
    call.integer = integer;
    call.reduce = sched::ReduceKind::kNone;
    call.traffic_class = TrafficClass::kSparse;
    call.tag = MicroBatchTag(g, phase, TRIRACE_CLASS_SPARSE);
    call.tag.layer = 0;
    return call;
  }
  void SparseForward(int64_t g) {
    const int fs = int(g % 2);
    b_.Wait(kSparse, Key(Ev::kRowsFree, fs));
    b_.Comm(kSparse, {SparseCall(NcclFunc::kAllGather, uint64_t(c_.sparse_indices) * 4, g, TRIRACE_PHASE_FORWARD, true)});
    b_.Comm(kSparse, {SparseCall(NcclFunc::kAlltoAll, uint64_t(c_.sparse_elems()) * 4, g, TRIRACE_PHASE_FORWARD, false)});
    b_.Record(kSparse, Key(Ev::kRowsReady, fs));
    b_.Wait(kCompute, Key(Ev::kRowsReady, fs));
  }
  void Forward(int64_t g) {
    if (embedding_) {
      b_.Compute(kCompute, c_.emb_fwd_us * 1000);
      b_.Record(kCompute, Key(Ev::kRowsFree, int(g % 2)));
      return;
    }
    b_.Compute(kCompute, c_.fwd_us * c_.layers * 1000);
  }
  void DenseBackward(int64_t g) {
    const int it = int(g / c_.micro_batches);
    const bool last_micro_batch = g % c_.micro_batches == c_.micro_batches - 1;
    for (int l = c_.layers - 1; l >= 0; --l) {
      b_.Compute(kCompute, c_.bwd_us * 1000);
      if (last_micro_batch) GradientReady(l, it);
    }
    if (last_micro_batch) b_.Record(kDense, Key(Ev::kDenseDone, it));
  }
  void GradientReady(int l, int it) {
    const int k = bucket_of_layer_[size_t(l)];
    const hybrid::Bucket& bucket = buckets_[size_t(k)];
    if (l == bucket.layers.front()) b_.Wait(kCompute, Key(Ev::kBucketDone, k));
    if (l != bucket.layers.back()) return;
    b_.Record(kCompute, Key(Ev::kBucketReady, k));
    b_.Wait(kDense, Key(Ev::kBucketReady, k));
    NcclCall call;
    call.func = NcclFunc::kAllReduce;
    call.comm = comms_.dp[size_t(stage_)];
    call.bytes = uint64_t(bucket.elems) * 4;
    call.traffic_class = TrafficClass::kDense;
    call.tag.layer = hybrid::FirstLayer(c_, stage_) + l;
    call.tag.stage = stage_;
    call.tag.iteration = it;
    call.tag.phase = TRIRACE_PHASE_BACKWARD;
    call.tag.traffic_class = TRIRACE_CLASS_DENSE;
    b_.Comm(kDense, {call});
    b_.Record(kDense, Key(Ev::kBucketDone, k));
  }
  void EmbeddingBackward(int64_t g) {
    const int gs = int(g % 2);
    b_.Compute(kCompute, c_.emb_bwd_us * 1000);
    b_.Wait(kCompute, Key(Ev::kGradsFree, gs));
    b_.Record(kCompute, Key(Ev::kGradsReady, gs));
    b_.Wait(kSparse, Key(Ev::kGradsReady, gs));
    b_.Comm(kSparse, {SparseCall(NcclFunc::kAlltoAll, uint64_t(c_.sparse_elems()) * 4, g, TRIRACE_PHASE_BACKWARD, false)});
    b_.Record(kSparse, Key(Ev::kGradsFree, gs));
    if (g % c_.micro_batches == c_.micro_batches - 1) b_.Record(kSparse, Key(Ev::kSparseDone, g / c_.micro_batches));
  }

  const Config& c_;
  const Comms& comms_;
  ProgramBuilder b_;
  const int stage_, replica_;
  const bool embedding_, last_;
  const std::vector<hybrid::Bucket> buckets_;
  std::vector<int> bucket_of_layer_;
};

}  // namespace

absl::StatusOr<Workload> HybridExampleWorkload(const Config& c) {
  std::string error;
  if (!hybrid::ValidateModel(c, &error)) return absl::InvalidArgumentError(error);
  Workload w;
  w.name = "hybrid_parallel/" + c.preset;
  w.iterations = c.iterations;
  w.warmup = c.warmup;
  const int S = c.total_stages(), D = c.replicas;
  Comms comms;
  // The example's splits: dp by stage (key replica), pp by replica (key
  // stage), the embedding comm over the embedding stage's replicas.
  for (int s = 0; s < S; ++s) {
    if (hybrid::IsEmbeddingStage(c, s)) {
      comms.dp.push_back(-1);
      continue;
    }
    CommSpec dp{"dp.stage" + std::to_string(s), {}, TrafficClass::kDense, false};
    for (int d = 0; d < D; ++d) dp.ranks.push_back(hybrid::RankOf(c, s, d));
    comms.dp.push_back(int(w.comms.size()));
    w.comms.push_back(std::move(dp));
  }
  for (int d = 0; d < D; ++d) {
    CommSpec pp{"pp.replica" + std::to_string(d), {}, TrafficClass::kP2P, true};
    for (int s = 0; s < S; ++s) pp.ranks.push_back(hybrid::RankOf(c, s, d));
    comms.pp.push_back(int(w.comms.size()));
    w.comms.push_back(std::move(pp));
  }
  if (c.embedding) {
    CommSpec sp{"embedding", {}, TrafficClass::kSparse, false};
    for (int d = 0; d < D; ++d) sp.ranks.push_back(hybrid::RankOf(c, 0, d));
    comms.sparse = int(w.comms.size());
    w.comms.push_back(std::move(sp));
  }
  w.ranks.resize(size_t(c.world_size()));
  for (int s = 0; s < S; ++s) {
    for (int d = 0; d < D; ++d) w.ranks[size_t(hybrid::RankOf(c, s, d))] = RankBuilder(c, comms, s, d).Build();
  }
  return w;
}

}  // namespace trirace::sim
