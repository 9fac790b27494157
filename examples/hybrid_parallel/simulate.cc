#include "simulate.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "model.h"
#include "schedule.h"

namespace hybrid {
namespace {

constexpr int kNone = -1;
enum Stream { kCompute = 0, kDense = 1, kSparse = 2, kStreams = 3 };
enum class Cls { kP2P = 0, kSparse = 1, kDense = 2 };
enum class Kind { kCompute, kWait, kMark, kComm };
enum class Coll { kAllReduce, kAllGather, kAlltoAll };
// The trainer's events, each a kind and an index (iteration, bucket or slot).
enum class Ev { kDenseDone, kSparseDone, kBucketReady, kBucketDone, kRowsReady, kRowsFree,
                kGradsReady, kGradsFree, kIterationEnd };

struct Op {
  Kind kind = Kind::kMark;
  int rank = 0;
  double us = 0;               // kCompute
  int wait_for = kNone;        // kWait: the op (a record) it waits for
  int host_gate = kNone;       // enqueued after the host waited for this op
  int stamp = kNone;           // kMark: iteration stamp index
  std::vector<int> posts;      // kComm: transfers it posts
  bool started = false, done = false;
  double end = 0;   // kCompute: when it finishes
  int pending = 0;  // kComm: transfers it waits for, not done
};

struct Transfer {
  int src_host = 0, dst_host = 0;
  double left = 0;  // bytes
  Cls cls = Cls::kP2P;
  std::vector<int> gates;   // ops that must have posted it before it moves
  std::vector<int> owners;  // ops that wait for it
  int posted = 0;
  bool active = false, done = false;
  double rate = 0;  // bytes per us
};

struct CollCall {
  Coll kind;
  double bytes;  // AllReduce: buffer; AllGather: per rank; AlltoAll: per peer
  int op;
};

// Builds every rank's stream program the way trainer.cc enqueues it.
class Builder {
 public:
  Builder(const Config& c, int per_host) : c_(c), per_host_(per_host) {}

  bool Build(std::vector<Op>* ops, std::vector<Transfer>* transfers, std::string* error) {
    for (int st = 0; st < c_.total_stages(); ++st) {
      for (int d = 0; d < c_.replicas; ++d) Rank(st, d);
    }
    if (!MatchP2P(error) || !MatchCollectives(error)) return false;
    *ops = std::move(ops_);
    *transfers = std::move(transfers_);
    return true;
  }

  std::vector<std::vector<int>> TakeStreams() { return std::move(streams_); }

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
    const double bytes = double(c_.act_elems()) * 4;
    for (auto [send, peer_stage] : calls) {
      const int peer = RankOf(c_, peer_stage, replica_);
      if (send) {
        sends_[{rank_, peer}].push_back({op, bytes});
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
    buckets_ = Buckets(c_);
    bucket_of_layer_.assign(size_t(c_.layers), 0);
    for (size_t b = 0; b < buckets_.size(); ++b) {
      for (int l : buckets_[b].layers) bucket_of_layer_[size_t(l)] = int(b);
    }
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
    if (back >= 0) host_gate_ = events_.at({int(Ev::kIterationEnd), back});
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
    for (auto& [key, sends] : sends_) {
      const std::vector<int>& recvs = recvs_[key];
      if (recvs.size() != sends.size()) {
        *error = "rank " + std::to_string(key.first) + " sends " + std::to_string(sends.size()) +
                 " messages to rank " + std::to_string(key.second) + ", which receives " +
                 std::to_string(recvs.size());
        return false;
      }
      for (size_t k = 0; k < sends.size(); ++k) {
        NewTransfer(key.first, key.second, sends[k].second, Cls::kP2P, {sends[k].first}, {recvs[k]});
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
  std::map<std::pair<int, int>, std::vector<std::pair<int, double>>> sends_;  // (from, to) -> (op, bytes)
  std::map<std::pair<int, int>, std::vector<int>> recvs_;                      // (from, to) -> op
  std::map<int, std::vector<std::vector<CollCall>>> colls_;                    // stage -> replica -> calls
  // The rank being built.
  int stage_ = 0, replica_ = 0, rank_ = 0, host_gate_ = kNone;
  bool embedding_ = false, last_ = false;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_layer_;
  std::map<std::pair<int, int>, int> events_;
};

// Runs the programs: the streams in order, compute for its time, transfers
// as fluid flows over the hosts' links.
class Engine {
 public:
  Engine(std::vector<Op> ops, std::vector<Transfer> transfers, std::vector<std::vector<int>> streams,
         int hosts, int ranks, int stamps, const SimOptions& o)
      : ops_(std::move(ops)),
        transfers_(std::move(transfers)),
        streams_(std::move(streams)),
        heads_(streams_.size(), 0),
        order_(o.order),
        rate_(o.gbps * 1e9 / 8 / 1e6),
        line_(std::max(o.line_gbps, o.gbps) * 1e9 / 8 / 1e6),
        burst_(std::max(o.burst_bytes, 0.0)),
        hosts_(hosts),
        tokens_(size_t(2 * hosts), burst_),
        at_line_(size_t(2 * hosts), burst_ >= kFrameBytes),
        used_(size_t(2 * hosts), 0),
        stamps_(size_t(ranks), std::vector<double>(size_t(stamps), -1)) {}

  bool Run(std::string* error) {
    for (;;) {
      Settle();
      if (Finished()) return true;
      Allocate();
      double dt = std::numeric_limits<double>::infinity();
      for (int id : running_) dt = std::min(dt, ops_[size_t(id)].end - now_);
      for (int t : active_) {
        const Transfer& tr = transfers_[size_t(t)];
        if (tr.rate > 0) dt = std::min(dt, tr.left / tr.rate);
      }
      if (!(dt < std::numeric_limits<double>::infinity())) return Stuck(error);
      dt = std::min(dt, NextBucketChange());
      Advance(std::max(dt, 0.0));
    }
  }

  double Stamp(int rank, int index) const { return stamps_[size_t(rank)][size_t(index)]; }

 private:
  // Starts and finishes what can at the current time, until nothing moves.
  void Settle() {
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t s = 0; s < streams_.size(); ++s) {
        while (heads_[s] < streams_[s].size()) {
          Op& op = ops_[size_t(streams_[s][heads_[s]])];
          if (!op.started && !Start(streams_[s][heads_[s]])) break;
          if (!op.done) break;
          ++heads_[s];
          moved = true;
        }
      }
    }
  }

  // Starts op `id` at its stream's head; false when it cannot start yet.
  bool Start(int id) {
    Op& op = ops_[size_t(id)];
    if (op.host_gate != kNone && !ops_[size_t(op.host_gate)].done) return false;
    switch (op.kind) {
      case Kind::kWait:
        if (op.wait_for != kNone && !ops_[size_t(op.wait_for)].done) return false;
        op.done = true;
        break;
      case Kind::kMark:
        if (op.stamp != kNone) stamps_[size_t(op.rank)][size_t(op.stamp)] = now_;
        op.done = true;
        break;
      case Kind::kCompute:
        op.end = now_ + op.us;
        op.done = op.us <= 0;
        if (!op.done) running_.push_back(id);
        break;
      case Kind::kComm:
        op.started = true;
        for (int t : op.posts) Post(t);  // may finish transfers within a host at once
        op.done = op.pending == 0;
        break;
    }
    op.started = true;
    return true;
  }

  void Post(int t) {
    Transfer& tr = transfers_[size_t(t)];
    if (++tr.posted < int(tr.gates.size())) return;
    if (tr.src_host == tr.dst_host || tr.left <= 0) return Finish(t);  // within a host: no wire
    tr.active = true;
    active_.push_back(t);
  }

  void Finish(int t) {
    Transfer& tr = transfers_[size_t(t)];
    tr.done = true;
    tr.active = false;
    for (int id : tr.owners) {
      if (--ops_[size_t(id)].pending == 0 && ops_[size_t(id)].started) ops_[size_t(id)].done = true;
    }
  }

  // Progressive filling per class level: every flow of a level gets the
  // fair share of its tightest link, then the next level takes what is left.
  void Allocate() {
    std::vector<double> left(size_t(2 * hosts_));  // [2h] = h.tx, [2h + 1] = h.rx
    for (size_t l = 0; l < left.size(); ++l) left[l] = at_line_[l] ? line_ : rate_;
    const int levels = order_ == WireOrder::kClassPriority ? 3 : 1;
    for (int t : active_) transfers_[size_t(t)].rate = 0;
    for (int level = 0; level < levels; ++level) {
      std::vector<int> open;
      for (int t : active_) {
        if (levels == 1 || int(transfers_[size_t(t)].cls) == level) open.push_back(t);
      }
      while (!open.empty()) {
        std::vector<int> users(left.size(), 0);
        for (int t : open) {
          ++users[size_t(2 * transfers_[size_t(t)].src_host)];
          ++users[size_t(2 * transfers_[size_t(t)].dst_host + 1)];
        }
        double share = std::numeric_limits<double>::infinity();
        for (size_t l = 0; l < left.size(); ++l) {
          if (users[l] > 0) share = std::min(share, std::max(left[l], 0.0) / users[l]);
        }
        // Flows on a link whose fair share is the smallest are fixed at it.
        std::vector<int> fixed, still;
        for (int t : open) {
          const Transfer& tr = transfers_[size_t(t)];
          const size_t tx = size_t(2 * tr.src_host), rx = size_t(2 * tr.dst_host + 1);
          const bool tight = std::max(left[tx], 0.0) / users[tx] <= share * (1 + 1e-12) ||
                             std::max(left[rx], 0.0) / users[rx] <= share * (1 + 1e-12);
          (tight ? fixed : still).push_back(t);
        }
        for (int t : fixed) {
          Transfer& tr = transfers_[size_t(t)];
          tr.rate = share;
          left[size_t(2 * tr.src_host)] -= share;
          left[size_t(2 * tr.dst_host + 1)] -= share;
        }
        open.swap(still);
      }
    }
    std::fill(used_.begin(), used_.end(), 0.0);
    for (int t : active_) {
      const Transfer& tr = transfers_[size_t(t)];
      used_[size_t(2 * tr.src_host)] += tr.rate;
      used_[size_t(2 * tr.dst_host + 1)] += tr.rate;
    }
  }

  // How long until a link's bucket runs dry or refills a frame, at the
  // current rates.
  double NextBucketChange() const {
    double dt = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < tokens_.size(); ++l) {
      const double net = rate_ - used_[l];  // tokens per us
      if (at_line_[l] && net < 0) dt = std::min(dt, tokens_[l] / -net);
      if (!at_line_[l] && net > 0 && burst_ >= kFrameBytes) dt = std::min(dt, (kFrameBytes - tokens_[l]) / net);
    }
    return dt;
  }

  void Advance(double dt) {
    now_ += dt;
    for (size_t l = 0; l < tokens_.size(); ++l) {
      tokens_[l] = std::clamp(tokens_[l] + (rate_ - used_[l]) * dt, 0.0, burst_);
      if (at_line_[l] && tokens_[l] <= 1e-6) at_line_[l] = false;
      if (!at_line_[l] && burst_ >= kFrameBytes && tokens_[l] >= kFrameBytes - 1e-6) at_line_[l] = true;
    }
    std::vector<int> still;
    for (int t : active_) {
      Transfer& tr = transfers_[size_t(t)];
      tr.left -= tr.rate * dt;
      if (tr.left <= 1e-6) {
        Finish(t);
      } else {
        still.push_back(t);
      }
    }
    active_.swap(still);
    std::vector<int> busy;
    for (int id : running_) {
      Op& op = ops_[size_t(id)];
      if (op.end <= now_ + 1e-9) {
        op.done = true;
      } else {
        busy.push_back(id);
      }
    }
    running_.swap(busy);
  }

  bool Finished() const {
    for (size_t s = 0; s < streams_.size(); ++s) {
      if (heads_[s] < streams_[s].size()) return false;
    }
    return true;
  }

  bool Stuck(std::string* error) const {
    *error = "the simulated loop is stuck (the program's calls do not match):";
    for (size_t s = 0; s < streams_.size(); ++s) {
      if (heads_[s] < streams_[s].size()) {
        const Op& op = ops_[size_t(streams_[s][heads_[s]])];
        *error += " rank " + std::to_string(s / kStreams) + " stream " + std::to_string(s % kStreams) +
                  " at op " + std::to_string(heads_[s]) + " (kind " + std::to_string(int(op.kind)) + ");";
      }
    }
    return false;
  }

  std::vector<Op> ops_;
  std::vector<Transfer> transfers_;
  std::vector<std::vector<int>> streams_;
  std::vector<size_t> heads_;
  const WireOrder order_;
  // Token buckets as tc's tbf: a link sends at line_ while it holds
  // tokens (refilled at rate_, at most burst_), at rate_ once they are spent;
  // back to line_ when a frame's worth has refilled.
  static constexpr double kFrameBytes = 9000;
  const double rate_, line_, burst_;  // bytes per us, bytes per us, bytes
  const int hosts_;
  std::vector<double> tokens_;
  std::vector<bool> at_line_;
  std::vector<double> used_;  // bytes per us, per link, from Allocate
  std::vector<int> running_, active_;
  double now_ = 0;
  std::vector<std::vector<double>> stamps_;  // [rank][iteration stamp]
};

}  // namespace

bool SimulateTraining(const Config& c, const SimOptions& o, SimResult* result, std::string* error) {
  if (!ValidateModel(c, error)) return false;
  if (o.ranks_per_host < 1 || c.world_size() % o.ranks_per_host != 0) {
    *error = "ranks per host " + std::to_string(o.ranks_per_host) + " must be >= 1 and divide the " +
             std::to_string(c.world_size()) + " ranks";
    return false;
  }
  if (!(o.gbps > 0)) {
    *error = "link rate " + std::to_string(o.gbps) + " Gbit/s must be > 0";
    return false;
  }
  Builder builder(c, o.ranks_per_host);
  std::vector<Op> ops;
  std::vector<Transfer> transfers;
  if (!builder.Build(&ops, &transfers, error)) return false;
  Engine engine(std::move(ops), std::move(transfers), builder.TakeStreams(), c.world_size() / o.ranks_per_host,
                c.world_size(), c.iterations + 1, o);
  if (!engine.Run(error)) return false;

  result->iteration_ms.assign(size_t(c.iterations), 0);
  for (int r = 0; r < c.world_size(); ++r) {
    for (int it = 0; it < c.iterations; ++it) {
      const double ms = (engine.Stamp(r, it + 1) - engine.Stamp(r, it)) / 1e3;
      result->iteration_ms[size_t(it)] = std::max(result->iteration_ms[size_t(it)], ms);
    }
  }
  std::vector<double> timed(result->iteration_ms.begin() + c.warmup, result->iteration_ms.end());
  std::sort(timed.begin(), timed.end());
  const size_t n = timed.size();
  result->median_ms = n == 0 ? 0 : n % 2 ? timed[n / 2] : (timed[n / 2 - 1] + timed[n / 2]) / 2;
  return true;
}

}  // namespace hybrid
