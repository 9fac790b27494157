#include "simulate_program.h"

#include <map>
#include <utility>

#include "model.h"
#include "schedule.h"

namespace hybrid::sim {
namespace {

enum class Coll { kAllReduce, kAllGather, kAlltoAll };
// The trainer's events, each a kind and an index (iteration, bucket or slot).
enum class Ev { kDenseDone, kSparseDone, kBucketReady, kBucketDone, kRowsReady, kRowsFree,
                kGradsReady, kGradsFree, kIterationEnd };

struct CollCall {
  Coll kind;
  double bytes;  // AllReduce: buffer; AllGather: per rank; AlltoAll: per peer
  int op;
};
// Builds every rank's stream program the way trainer.cc enqueues it.
class Builder {
 public:
  Builder(const Config& c, int per_host) : c_(c), per_host_(per_host), buckets_(Buckets(c)) {
    bucket_of_layer_.assign(size_t(c.layers), 0);
    for (size_t b = 0; b < buckets_.size(); ++b) {
      for (int l : buckets_[b].layers) bucket_of_layer_[size_t(l)] = int(b);
    }
  }

  bool Build(Program* out, std::string* error) {
    for (int st = 0; st < c_.total_stages(); ++st) {
      for (int d = 0; d < c_.replicas; ++d) Rank(st, d);
    }
    if (!MatchP2P(error) || !MatchCollectives(error)) return false;
    out->ops = std::move(ops_);
    out->transfers = std::move(transfers_);
    out->streams = std::move(streams_);
    return true;
  }

 private:
  int HostOf(int rank) const { return rank / per_host_; }

  int Add(int stream, Op op) {
    op.rank = rank_;
    op.host_gate = host_gate_;
    ops_.push_back(std::move(op));
    const int id = int(ops_.size()) - 1;
    streams_[size_t(rank_ * kStreams + stream)].push_back(id);
    return id;
  }
  void Compute(double us) {
    Op op;
    op.kind = Kind::kCompute;
    op.us = us;
    Add(kCompute, op);
  }
  void Record(int stream, Ev e, int index) { events_[{int(e), index}] = Add(stream, Op{}); }
  void Wait(int stream, Ev e, int index) {
    auto it = events_.find({int(e), index});
    if (it == events_.end()) return;  // never recorded: waiting on it is a no-op
    Op op;
    op.kind = Kind::kWait;
    op.wait_for = it->second;
    Add(stream, op);
  }
  void Stamp(int index) {
    Op op;
    op.stamp = index;
    Add(kCompute, op);
  }
  int Comm(int stream) {
    Op op;
    op.kind = Kind::kComm;
    return Add(stream, op);
  }
  // One NCCL group of P2P calls with pipeline neighbours (+1 / -1 stages).
  void P2PGroup(std::initializer_list<std::pair<bool, int>> calls) {
    const int op = Comm(kCompute);
    for (auto [send, peer_stage] : calls) {
      const int peer = RankOf(c_, peer_stage, replica_);
      if (send) {
        sends_[{rank_, peer}].push_back(op);
      } else {
        recvs_[{peer, rank_}].push_back(op);
      }
    }
  }
  // A collective over the stage's replicas: the DP all-reduce of a dense
  // stage or the embedding stage's sparse calls (a stage has one or the
  // other, so the stage names the communicator).
  void Collective(int stream, Coll kind, double bytes) {
    std::vector<std::vector<CollCall>>& members = colls_[stage_];
    members.resize(size_t(c_.replicas));
    members[size_t(replica_)].push_back({kind, bytes, Comm(stream)});
  }

  void Rank(int stage, int replica) {
    stage_ = stage;
    replica_ = replica;
    rank_ = RankOf(c_, stage, replica);
    if (streams_.empty()) streams_.resize(size_t(c_.world_size() * kStreams));
    events_.clear();
    host_gate_ = kNone;
    embedding_ = IsEmbeddingStage(c_, stage);
    last_ = IsLastStage(c_, stage);
    for (const Action& a : StageSchedule(c_, stage)) Do(a);
  }

  void Do(const Action& a) {
    switch (a.step) {
      case Step::kIterationBegin: return IterationBegin(a.iteration);
      case Step::kRecvForward: return RecvForward(a.fwd);
      case Step::kForward: return Forward(a.fwd);
      case Step::kSendForward:
        if (!last_) P2PGroup({{true, stage_ + 1}});
        return;
      case Step::kSendForwardRecvBackward:
        if (!last_) P2PGroup({{true, stage_ + 1}, {false, stage_ + 1}});
        return;
      case Step::kBackward: return embedding_ ? EmbeddingBackward(a.bwd) : DenseBackward(a.bwd);
      case Step::kSendBackwardRecvForward:
        if (stage_ == 0) return RecvForward(a.fwd);
        P2PGroup({{true, stage_ - 1}, {false, stage_ - 1}});
        return;
      case Step::kRecvBackward:
        if (!last_) P2PGroup({{false, stage_ + 1}});
        return;
      case Step::kSendBackward:
        if (stage_ > 0) P2PGroup({{true, stage_ - 1}});
        return;
      case Step::kIterationEnd: return IterationEnd(a.iteration);
    }
  }

  Ev Done() const { return embedding_ ? Ev::kSparseDone : Ev::kDenseDone; }

  void IterationBegin(int it) {
    if (it == 0) Stamp(0);
    const int back = it - 1 - c_.lookahead;
    // As the trainer's host wait on an event not yet recorded: an iteration
    // whose end this stage has not issued yet (2BW begins the next
    // iteration's forwards before the last backwards) holds nothing back.
    const auto end = events_.find({int(Ev::kIterationEnd), back});
    if (back >= 0 && end != events_.end()) host_gate_ = end->second;
    if (c_.schedule == Schedule::k2BW && it >= 2) Wait(kCompute, Done(), it - 2);
  }
  void IterationEnd(int it) {
    if (c_.schedule == Schedule::k1F1B) Wait(kCompute, Done(), it);
    Stamp(it + 1);
    Record(kCompute, Ev::kIterationEnd, it);
  }
  void RecvForward(int64_t g) {
    if (embedding_) return SparseForward(g);
    if (stage_ > 0) P2PGroup({{false, stage_ - 1}});
  }
  void SparseForward(int64_t g) {
    const int fs = int(g % 2);
    Wait(kSparse, Ev::kRowsFree, fs);
    Collective(kSparse, Coll::kAllGather, double(c_.sparse_indices) * 4);
    Collective(kSparse, Coll::kAlltoAll, double(c_.sparse_elems()) * 4);
    Record(kSparse, Ev::kRowsReady, fs);
    Wait(kCompute, Ev::kRowsReady, fs);
  }
  void Forward(int64_t g) {
    if (embedding_) {
      Compute(double(c_.emb_fwd_us));
      Record(kCompute, Ev::kRowsFree, int(g % 2));
      return;
    }
    Compute(double(c_.fwd_us * c_.layers));
  }
  void DenseBackward(int64_t b) {
    const int it = int(b / c_.micro_batches);
    const bool last_micro_batch = b % c_.micro_batches == c_.micro_batches - 1;
    for (int l = c_.layers - 1; l >= 0; --l) {
      Compute(double(c_.bwd_us));
      if (last_micro_batch) GradientReady(l);
    }
    if (last_micro_batch) Record(kDense, Ev::kDenseDone, it);
  }
  void GradientReady(int l) {
    const int bk = bucket_of_layer_[size_t(l)];
    const Bucket& bucket = buckets_[size_t(bk)];
    if (l == bucket.layers.front()) Wait(kCompute, Ev::kBucketDone, bk);
    if (l != bucket.layers.back()) return;
    Record(kCompute, Ev::kBucketReady, bk);
    Wait(kDense, Ev::kBucketReady, bk);
    Collective(kDense, Coll::kAllReduce, double(bucket.elems) * 4);
    Record(kDense, Ev::kBucketDone, bk);
  }
  void EmbeddingBackward(int64_t b) {
    const int gs = int(b % 2);
    Compute(double(c_.emb_bwd_us));
    Wait(kCompute, Ev::kGradsFree, gs);
    Record(kCompute, Ev::kGradsReady, gs);
    Wait(kSparse, Ev::kGradsReady, gs);
    Collective(kSparse, Coll::kAlltoAll, double(c_.sparse_elems()) * 4);
    Record(kSparse, Ev::kGradsFree, gs);
    if (b % c_.micro_batches == c_.micro_batches - 1) {
      Record(kSparse, Ev::kSparseDone, int(b / c_.micro_batches));
    }
  }

  void NewTransfer(int src_rank, int dst_rank, double bytes, Cls cls, std::vector<int> gates,
                   std::vector<int> owners) {
    Transfer t;
    t.src_host = HostOf(src_rank);
    t.dst_host = HostOf(dst_rank);
    t.src_rank = src_rank;
    t.dst_rank = dst_rank;
    t.left = bytes;
    t.cls = cls;
    t.gates = std::move(gates);
    t.owners = std::move(owners);
    transfers_.push_back(std::move(t));
    const int id = int(transfers_.size()) - 1;
    for (int op : transfers_.back().gates) ops_[size_t(op)].posts.push_back(id);
    for (int op : transfers_.back().owners) ++ops_[size_t(op)].pending;
  }

  // Pairs the k-th send from a to b with the k-th receive at b from a, as
  // NCCL does per peer. Sends are eager and buffered, as on the TCP plugin:
  // a send completes once its bytes are in the kernel's socket buffer, and
  // they flow to the receiver's socket buffer before it posts its receive;
  // so the send alone starts the flow and only the receive waits for it.
  bool MatchP2P(std::string* error) {
    const double bytes = double(c_.act_elems()) * 4;  // every P2P message is one activation
    for (auto& [key, sends] : sends_) {
      const std::vector<int>& recvs = recvs_[key];
      if (recvs.size() != sends.size()) {
        *error = "rank " + std::to_string(key.first) + " sends " + std::to_string(sends.size()) +
                 " messages to rank " + std::to_string(key.second) + ", which receives " +
                 std::to_string(recvs.size());
        return false;
      }
      for (size_t k = 0; k < sends.size(); ++k) {
        NewTransfer(key.first, key.second, bytes, Cls::kP2P, {sends[k]}, {recvs[k]});
      }
    }
    return true;
  }

  // Matches the k-th call of every member of a communicator and lays out
  // its flows: rings for AllReduce and AllGather, one flow per peer for
  // AlltoAll. A collective moves once every member has called it (a ring
  // step needs its predecessor's data).
  bool MatchCollectives(std::string* error) {
    const int D = c_.replicas;
    for (auto& [stage, members] : colls_) {
      for (size_t k = 0; k < members[0].size(); ++k) {
        std::vector<int> gates;
        for (const auto& calls : members) {
          if (calls.size() != members[0].size() || calls[k].kind != members[0][k].kind) {
            *error = "stage " + std::to_string(stage) + ": replicas disagree at collective " + std::to_string(k);
            return false;
          }
          gates.push_back(calls[k].op);
        }
        for (int m = 0; m < D && D > 1; ++m) {
          const CollCall& call = members[size_t(m)][k];
          const int from = RankOf(c_, stage, m);
          switch (call.kind) {
            case Coll::kAllReduce:
              NewTransfer(from, RankOf(c_, stage, (m + 1) % D), 2.0 * (D - 1) / D * call.bytes, Cls::kDense,
                          gates, gates);
              break;
            case Coll::kAllGather:
              NewTransfer(from, RankOf(c_, stage, (m + 1) % D), double(D - 1) * call.bytes, Cls::kSparse,
                          gates, gates);
              break;
            case Coll::kAlltoAll:
              for (int p = 0; p < D; ++p) {
                if (p != m) NewTransfer(from, RankOf(c_, stage, p), call.bytes, Cls::kSparse, gates, gates);
              }
              break;
          }
        }
      }
    }
    return true;
  }

  const Config& c_;
  const int per_host_;
  std::vector<Op> ops_;
  std::vector<Transfer> transfers_;
  std::vector<std::vector<int>> streams_;
  // Every dense stage has the same DDP buckets.
  const std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_layer_;
  std::map<std::pair<int, int>, std::vector<int>> sends_;    // (from, to) -> ops
  std::map<std::pair<int, int>, std::vector<int>> recvs_;    // (from, to) -> ops
  std::map<int, std::vector<std::vector<CollCall>>> colls_;  // stage -> replica -> calls
  // The rank being built.
  int stage_ = 0, replica_ = 0, rank_ = 0, host_gate_ = kNone;
  bool embedding_ = false, last_ = false;
  std::map<std::pair<int, int>, int> events_;
};

}  // namespace

bool BuildProgram(const Config& c, int ranks_per_host, Program* out, std::string* error) {
  return Builder(c, ranks_per_host).Build(out, error);
}

}  // namespace hybrid::sim
