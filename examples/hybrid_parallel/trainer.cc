#include "trainer.h"

#include <array>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "data_model.h"
#include "model.h"
#include "schedule.h"
#include "trirace/trirace.h"

namespace hybrid {
namespace {

using Floats = std::vector<float>;
using Events = std::vector<std::unique_ptr<Event>>;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Events MakeEvents(const Device& dev, size_t n) {
  Events e;
  for (size_t i = 0; i < n; ++i) e.push_back(std::make_unique<Event>(dev));
  return e;
}

// A communicator from ncclCommSplit (null when this rank is not a member).
// Destroyed after a clean run, aborted otherwise (never waits on a peer).
class Comm {
 public:
  Comm(ncclComm_t world, int color, int key, int role) {
    CheckNccl(ncclCommSplit(world, color, key, &comm_, nullptr), "ncclCommSplit");
    if (comm_ != nullptr) trirace_set_comm_role(comm_, role);
  }
  ~Comm() {
    if (comm_ == nullptr) return;
    if (clean_) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ncclComm_t get() const { return comm_; }
  void MarkClean() { clean_ = true; }

 private:
  ncclComm_t comm_ = nullptr;
  bool clean_ = false;
};

class Training {
 public:
  Training(const Config& c, const Device& dev, ncclComm_t world);
  RunResult Run();

 private:
  void Do(const Action& a);
  void IterationBegin(int it);
  void IterationEnd(int it);
  void RecvForward(int64_t g);
  void SparseForward(int64_t g);
  void Forward(int64_t g);
  void SendForward(int64_t g);
  void SendForwardRecvBackward(int64_t f, int64_t b);
  void Backward(int64_t b);
  void DenseBackward(int64_t b);
  void GradientReady(int layer, int it);
  void EmbeddingBackward(int64_t b);
  void SendBackwardRecvForward(int64_t b, int64_t f);
  void RecvBackward(int64_t b);
  void SendBackward(int64_t b);

  float* Slot(std::vector<Floats>& ring, int64_t g) { return ring[size_t(g % slots_)].data(); }
  trirace::Tag MicroBatchTag(int64_t g, trirace_phase_t phase, trirace_class_t cls) const {
    return trirace::Tag()
        .Stage(stage_)
        .MicroBatch(static_cast<int32_t>(g % M_))
        .Iteration(g / M_)
        .Phase(phase)
        .Class(cls);
  }
  void P2P(bool send, float* buf, int peer, int64_t g, trirace_phase_t phase);

  const Config& c_;
  const Device& dev_;
  const int stage_, replica_, M_;
  const bool embedding_, last_;
  const int slots_;
  const int64_t A_, Q_, G_;
  const int D_, K_;

  Comm dp_, pp_, sparse_;
  Stream compute_, dense_, sparse_stream_;

  // Activation rings, indexed by micro-batch % slots_.
  std::vector<Floats> x_in_, y_out_, gy_in_, gx_out_;

  // Dense stages: DDP buckets, weights per local layer.
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_layer_;
  std::vector<int64_t> offset_of_layer_;
  std::vector<Floats> bucket_buf_, weights_;
  Events bucket_ready_, bucket_done_, dense_iteration_done_;

  // Embedding stage.
  std::vector<int32_t> idx_send_, idx_all_;
  Floats rows_send_;
  std::array<Floats, 2> rows_recv_, grad_rows_send_, grad_rows_recv_;
  Events rows_ready_, rows_free_, grads_ready_, grads_free_, sparse_iteration_done_;
  Floats table_;

  // Touched only by host functions on the compute stream, read after sync.
  uint64_t fold_ = 0;
  std::vector<int64_t> signal_;     // per iteration
  std::vector<int64_t> stamps_ns_;  // [0] start, [it + 1] end of iteration it
  Events iteration_end_;
};

Training::Training(const Config& c, const Device& dev, ncclComm_t world)
    : c_(c),
      dev_(dev),
      stage_(PlaceOf(c, c.rank).stage),
      replica_(PlaceOf(c, c.rank).replica),
      M_(c.micro_batches),
      embedding_(IsEmbeddingStage(c, stage_)),
      last_(IsLastStage(c, stage_)),
      slots_(RingSlots(c, stage_)),
      A_(c.act_elems()),
      Q_(c.sparse_elems()),
      G_(c.grad_elems()),
      D_(c.replicas),
      K_(c.sparse_indices),
      // Every rank takes part in every split, in the same order.
      dp_(world, embedding_ ? NCCL_SPLIT_NOCOLOR : stage_, replica_, TRIRACE_ROLE_DATA_PARALLEL),
      pp_(world, replica_, stage_, TRIRACE_ROLE_PIPELINE),
      sparse_(world, embedding_ ? 0 : NCCL_SPLIT_NOCOLOR, replica_, TRIRACE_ROLE_EXPERT),
      compute_(dev),
      dense_(dev),
      sparse_stream_(dev),
      x_in_(slots_, Floats(A_)),
      y_out_(slots_, Floats(A_)),
      gy_in_(slots_, Floats(A_)),
      gx_out_(slots_, Floats(A_)),
      signal_(c.iterations, 0),
      stamps_ns_(c.iterations + 1, 0),
      iteration_end_(MakeEvents(dev, c.iterations)) {
  if (embedding_) {
    idx_send_.resize(K_);
    idx_all_.resize(size_t(K_) * D_);
    rows_send_.resize(D_ * Q_);
    for (int i = 0; i < 2; ++i) {
      rows_recv_[i].resize(D_ * Q_);
      grad_rows_send_[i].resize(D_ * Q_);
      grad_rows_recv_[i].resize(D_ * Q_);
    }
    rows_ready_ = MakeEvents(dev, 2);
    rows_free_ = MakeEvents(dev, 2);
    grads_ready_ = MakeEvents(dev, 2);
    grads_free_ = MakeEvents(dev, 2);
    sparse_iteration_done_ = MakeEvents(dev, c.iterations);
    table_.resize(Q_);
    data::InitTable(table_.data(), Q_);
    return;
  }
  buckets_ = Buckets(c);
  bucket_of_layer_.resize(c.layers);
  offset_of_layer_.resize(c.layers);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t off = 0;
    for (int l : buckets_[b].layers) {
      bucket_of_layer_[l] = static_cast<int>(b);
      offset_of_layer_[l] = off;
      off += G_;
    }
    bucket_buf_.emplace_back(buckets_[b].elems);
  }
  for (int l = 0; l < c.layers; ++l) {
    weights_.emplace_back(G_);
    data::InitWeights(FirstLayer(c, stage_) + l, weights_.back().data(), G_);
  }
  bucket_ready_ = MakeEvents(dev, buckets_.size());
  bucket_done_ = MakeEvents(dev, buckets_.size());
  dense_iteration_done_ = MakeEvents(dev, c.iterations);
}

RunResult Training::Run() {
  for (const Action& a : StageSchedule(c_, stage_)) Do(a);
  dev_.Synchronize(compute_.get());
  dev_.Synchronize(dense_.get());
  dev_.Synchronize(sparse_stream_.get());
  dp_.MarkClean();
  pp_.MarkClean();
  sparse_.MarkClean();

  Floats w;
  for (const Floats& layer : weights_) w.insert(w.end(), layer.begin(), layer.end());
  RunResult r;
  r.rank_hash = data::RankHash(stage_, replica_, fold_, w, table_);
  for (int it = 0; it < c_.iterations; ++it) {
    r.iteration_ms.push_back(double(stamps_ns_[it + 1] - stamps_ns_[it]) / 1e6);
  }
  return r;
}

void Training::Do(const Action& a) {
  switch (a.step) {
    case Step::kIterationBegin: return IterationBegin(a.iteration);
    case Step::kRecvForward: return RecvForward(a.fwd);
    case Step::kForward: return Forward(a.fwd);
    case Step::kSendForward: return SendForward(a.fwd);
    case Step::kSendForwardRecvBackward: return SendForwardRecvBackward(a.fwd, a.bwd);
    case Step::kBackward: return Backward(a.bwd);
    case Step::kSendBackwardRecvForward: return SendBackwardRecvForward(a.bwd, a.fwd);
    case Step::kRecvBackward: return RecvBackward(a.bwd);
    case Step::kSendBackward: return SendBackward(a.bwd);
    case Step::kIterationEnd: return IterationEnd(a.iteration);
  }
}

void Training::IterationBegin(int it) {
  cudaStream_t s = compute_.get();
  if (it == 0) dev_.Launch(s, [this] { stamps_ns_[0] = NowNs(); });
  // Like a framework reading the loss: the host stays at most `lookahead`
  // iterations ahead of the streams.
  const int back = it - 1 - c_.lookahead;
  if (back >= 0) dev_.HostWait(iteration_end_[back]->get());
  trirace_iteration_begin(it);
  if (c_.schedule == Schedule::k2BW && it >= 2) {
    // Two weight versions: iteration it may use weights without the update
    // of it - 1, but not without that of it - 2.
    if (!embedding_) dev_.Wait(s, dense_iteration_done_[it - 2]->get());
    if (embedding_) dev_.Wait(s, sparse_iteration_done_[it - 2]->get());
  }
}

void Training::IterationEnd(int it) {
  cudaStream_t s = compute_.get();
  if (c_.schedule == Schedule::k1F1B) {
    // Flush: the optimizer step needs every gradient of the iteration.
    if (!embedding_) dev_.Wait(s, dense_iteration_done_[it]->get());
    if (embedding_) dev_.Wait(s, sparse_iteration_done_[it]->get());
  }
  dev_.Launch(s, [this, it] { stamps_ns_[it + 1] = NowNs(); });
  dev_.Record(iteration_end_[it]->get(), s);
  trirace_iteration_end(it);
}

void Training::P2P(bool send, float* buf, int peer, int64_t g, trirace_phase_t phase) {
  trirace::TagScope tag(MicroBatchTag(g, phase, TRIRACE_CLASS_P2P));
  if (send) {
    CheckNccl(ncclSend(buf, size_t(A_), ncclFloat, peer, pp_.get(), compute_.get()), "ncclSend");
  } else {
    CheckNccl(ncclRecv(buf, size_t(A_), ncclFloat, peer, pp_.get(), compute_.get()), "ncclRecv");
  }
}

void Training::RecvForward(int64_t g) {
  if (embedding_) return SparseForward(g);
  float* x = Slot(x_in_, g);
  if (stage_ == 0) {
    dev_.Launch(compute_.get(), [this, g, x] { data::InputActivation(replica_, g, x, A_); });
    return;
  }
  P2P(false, x, stage_ - 1, g, TRIRACE_PHASE_FORWARD);
}

void Training::SparseForward(int64_t g) {
  cudaStream_t e = sparse_stream_.get();
  const int fs = int(g % 2);
  float* recv = rows_recv_[fs].data();
  dev_.Wait(e, rows_free_[fs]->get());
  dev_.Launch(e, [this, g] { data::EmbeddingIndices(replica_, g, idx_send_.data(), K_); });
  {
    trirace::TagScope tag(MicroBatchTag(g, TRIRACE_PHASE_FORWARD, TRIRACE_CLASS_SPARSE).Layer(0));
    CheckNccl(ncclAllGather(idx_send_.data(), idx_all_.data(), size_t(K_), ncclInt32, sparse_.get(), e),
              "ncclAllGather");
  }
  dev_.Launch(e, [this, g] {
    data::EmbeddingRows(replica_, idx_all_.data(), K_, D_, g, rows_send_.data(), Q_);
  });
  {
    trirace::TagScope tag(MicroBatchTag(g, TRIRACE_PHASE_FORWARD, TRIRACE_CLASS_SPARSE).Layer(0));
    CheckNccl(ncclAlltoAll(rows_send_.data(), recv, size_t(Q_), ncclFloat, sparse_.get(), e),
              "ncclAlltoAll");
  }
  dev_.Record(rows_ready_[fs]->get(), e);
  dev_.Wait(compute_.get(), rows_ready_[fs]->get());
}

void Training::Forward(int64_t g) {
  cudaStream_t s = compute_.get();
  float* y = Slot(y_out_, g);
  if (embedding_) {
    const int fs = int(g % 2);
    const float* rows = rows_recv_[fs].data();
    // A kernel's data work is queued before its time (here and below): the
    // host's CPU time for it then hides in the emulated duration, as a GPU
    // kernel's work is its duration, instead of delaying the send after it.
    dev_.Launch(s, [this, rows, y] { data::EmbeddingOutput(rows, D_, Q_, y, A_); });
    dev_.Compute(s, c_.emb_fwd_us);
    dev_.Record(rows_free_[fs]->get(), s);
    return;
  }
  const float* x = Slot(x_in_, g);
  if (stage_ > 0) {
    dev_.Launch(s, [this, g, x] { fold_ += data::FoldTerm(data::Received::kActivation, g, x, A_); });
  }
  dev_.Launch(s, [this, x, y] { data::DenseForward(stage_, x, y, A_); });
  dev_.Compute(s, c_.fwd_us * c_.layers);
}

void Training::SendForward(int64_t g) {
  if (!last_) P2P(true, Slot(y_out_, g), stage_ + 1, g, TRIRACE_PHASE_FORWARD);
}

void Training::SendForwardRecvBackward(int64_t f, int64_t b) {
  if (last_) return;  // the last stage makes its gradient from the loss
  CheckNccl(ncclGroupStart(), "ncclGroupStart");
  P2P(true, Slot(y_out_, f), stage_ + 1, f, TRIRACE_PHASE_FORWARD);
  P2P(false, Slot(gy_in_, b), stage_ + 1, b, TRIRACE_PHASE_BACKWARD);
  CheckNccl(ncclGroupEnd(), "ncclGroupEnd");
}

void Training::SendBackwardRecvForward(int64_t b, int64_t f) {
  if (stage_ == 0) return RecvForward(f);  // nothing to send back to
  CheckNccl(ncclGroupStart(), "ncclGroupStart");
  P2P(true, Slot(gx_out_, b), stage_ - 1, b, TRIRACE_PHASE_BACKWARD);
  P2P(false, Slot(x_in_, f), stage_ - 1, f, TRIRACE_PHASE_FORWARD);
  CheckNccl(ncclGroupEnd(), "ncclGroupEnd");
}

void Training::RecvBackward(int64_t b) {
  if (!last_) P2P(false, Slot(gy_in_, b), stage_ + 1, b, TRIRACE_PHASE_BACKWARD);
}

void Training::SendBackward(int64_t b) {
  if (stage_ > 0) P2P(true, Slot(gx_out_, b), stage_ - 1, b, TRIRACE_PHASE_BACKWARD);
}

void Training::Backward(int64_t b) {
  if (embedding_) return EmbeddingBackward(b);
  DenseBackward(b);
}

void Training::DenseBackward(int64_t b) {
  cudaStream_t s = compute_.get();
  const int it = static_cast<int>(b / M_);
  const bool last_micro_batch = b % M_ == M_ - 1;
  float* gy = Slot(gy_in_, b);
  const float* y = Slot(y_out_, b);
  dev_.Launch(s, [this, b, it, gy, y] {
    if (last_) {
      data::LossGradient(y, gy, A_);
    } else {
      fold_ += data::FoldTerm(data::Received::kGradient, b, gy, A_);
    }
    signal_[it] += data::GradientSignal(gy, A_);
  });
  if (stage_ > 0) {
    // The input gradient before the layers' time (see Forward); it reads
    // only gy and x, which nothing below writes.
    const float* x = Slot(x_in_, b);
    float* gx = Slot(gx_out_, b);
    dev_.Launch(s, [this, gy, x, gx] { data::DenseBackward(stage_, gy, x, gx, A_); });
  }
  for (int l = c_.layers - 1; l >= 0; --l) {
    dev_.Compute(s, c_.bwd_us);
    // DDP accumulates over micro-batches and reduces after the last one.
    if (last_micro_batch) GradientReady(l, it);
  }
  if (last_micro_batch) dev_.Record(dense_iteration_done_[it]->get(), dense_.get());
}

void Training::GradientReady(int l, int it) {
  cudaStream_t s = compute_.get(), d = dense_.get();
  const int bk = bucket_of_layer_[l];
  const Bucket& bucket = buckets_[bk];
  float* buf = bucket_buf_[bk].data();
  // The bucket's previous all-reduce and update must be done before it is
  // refilled.
  if (l == bucket.layers.front()) dev_.Wait(s, bucket_done_[bk]->get());
  const int layer = FirstLayer(c_, stage_) + l;
  float* dst = buf + offset_of_layer_[l];
  dev_.Launch(s, [this, layer, it, dst] {
    data::FillGradient(layer, replica_, it, data::GradientOffset(signal_[it]), dst, G_);
  });
  if (l != bucket.layers.back()) return;
  // The bucket's front-most layer is done: all-reduce it.
  dev_.Record(bucket_ready_[bk]->get(), s);
  dev_.Wait(d, bucket_ready_[bk]->get());
  {
    trirace::TagScope tag(trirace::Tag()
                              .Layer(layer)
                              .Stage(stage_)
                              .Iteration(it)
                              .Phase(TRIRACE_PHASE_BACKWARD)
                              .Class(TRIRACE_CLASS_DENSE));
    CheckNccl(ncclAllReduce(buf, buf, size_t(bucket.elems), ncclFloat, ncclSum, dp_.get(), d),
              "ncclAllReduce");
  }
  dev_.Launch(d, [this, bk] {
    for (int l2 : buckets_[bk].layers) {
      data::AddInto(bucket_buf_[bk].data() + offset_of_layer_[l2], weights_[l2].data(), G_);
    }
  });
  dev_.Record(bucket_done_[bk]->get(), d);
}

void Training::EmbeddingBackward(int64_t b) {
  cudaStream_t s = compute_.get(), e = sparse_stream_.get();
  const int it = static_cast<int>(b / M_);
  const int gs = int(b % 2);
  const float* gy = Slot(gy_in_, b);
  float* send = grad_rows_send_[gs].data();
  float* recv = grad_rows_recv_[gs].data();
  dev_.Launch(s, [this, b, gy] { fold_ += data::FoldTerm(data::Received::kGradient, b, gy, A_); });
  dev_.Compute(s, c_.emb_bwd_us);
  dev_.Wait(s, grads_free_[gs]->get());
  dev_.Launch(s, [this, gy, send] { data::EmbeddingGradRows(gy, A_, D_, Q_, send); });
  dev_.Record(grads_ready_[gs]->get(), s);
  dev_.Wait(e, grads_ready_[gs]->get());
  {
    trirace::TagScope tag(MicroBatchTag(b, TRIRACE_PHASE_BACKWARD, TRIRACE_CLASS_SPARSE).Layer(0));
    CheckNccl(ncclAlltoAll(send, recv, size_t(Q_), ncclFloat, sparse_.get(), e), "ncclAlltoAll");
  }
  dev_.Launch(e, [this, recv] { data::AccumulateTable(recv, D_, Q_, table_.data()); });
  dev_.Record(grads_free_[gs]->get(), e);
  if (b % M_ == M_ - 1) dev_.Record(sparse_iteration_done_[it]->get(), e);
}

}  // namespace

RunResult RunTraining(const Config& c, const Device& dev, ncclComm_t world) {
  auto training = std::make_unique<Training>(c, dev, world);
  try {
    return training->Run();
  } catch (...) {
    // Streams may still run work that touches the buffers: leave them be;
    // the caller exits.
    training.release();
    throw;
  }
}

}  // namespace hybrid
