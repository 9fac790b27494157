#include "sim/workloads/transformer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/cluster/cluster_links.h"

namespace trirace::sim {
namespace {

enum Stream { kCompute = 0, kDense = 1, kFirstPeerStream = 2 };

// One unit of a stage's schedule: a forward or backward of micro-batch g
// (counted over the whole run) through model chunk `chunk`.
struct Item {
  bool fwd = true;
  int64_t g = 0;
  int chunk = 0;
  int it = 0;
};

// The stage's items, in the order it runs them, over every iteration.
std::vector<Item> StageItems(const TrainingSpec& s, int p) {
  const int P = s.pp, M = s.microbatches;
  std::vector<Item> out;
  auto add = [&](bool fwd, int64_t g, int chunk) { out.push_back({fwd, g, chunk, int(g / M)}); };
  // One 1F1B run over micro-batches [first, first + n).
  auto one_f_one_b = [&](int64_t first, int64_t n) {
    const int64_t warm = std::min<int64_t>(P - p - 1, n);
    for (int64_t i = 0; i < warm; ++i) add(true, first + i, 0);
    for (int64_t i = 0; i < n - warm; ++i) {
      add(true, first + warm + i, 0);
      add(false, first + i, 0);
    }
    for (int64_t i = n - warm; i < n; ++i) add(false, first + i, 0);
  };
  switch (s.schedule) {
    case PipelineSchedule::k1F1B:
      for (int it = 0; it < s.iterations; ++it) one_f_one_b(int64_t(it) * M, M);
      break;
    case PipelineSchedule::k2BW: one_f_one_b(0, int64_t(M) * s.iterations); break;
    case PipelineSchedule::kGPipe:
      for (int it = 0; it < s.iterations; ++it) {
        for (int m = 0; m < M; ++m) add(true, int64_t(it) * M + m, 0);
        for (int m = M - 1; m >= 0; --m) add(false, int64_t(it) * M + m, 0);
      }
      break;
    case PipelineSchedule::kInterleaved: {
      const int v = s.chunks;
      const int total = M * v;
      // Megatron-LM's order of a stage's virtual micro-batches.
      auto mb = [&](int k) { return (k / (P * v)) * P + k % P; };
      auto fchunk = [&](int k) { return (k / P) % v; };
      auto bchunk = [&](int k) { return v - 1 - (k / P) % v; };
      const int warm = M == P ? total : std::min((P - p - 1) * 2 + (v - 1) * P, total);
      for (int it = 0; it < s.iterations; ++it) {
        const int64_t base = int64_t(it) * M;
        for (int k = 0; k < warm; ++k) add(true, base + mb(k), fchunk(k));
        for (int i = 0; i < total - warm; ++i) {
          add(true, base + mb(warm + i), fchunk(warm + i));
          add(false, base + mb(i), bchunk(i));
        }
        for (int k = total - warm; k < total; ++k) add(false, base + mb(k), bchunk(k));
      }
      break;
    }
  }
  return out;
}

// Event keys: kind, then two indexes.
enum class Ev : int64_t { kSend = 1, kRecv, kBucketReady, kBucketDone, kDenseDone, kIterationEnd };
int64_t Key(Ev e, int64_t a, int64_t b = 0) { return (int64_t(e) << 56) | (a << 20) | b; }
// A message's identity: direction, micro-batch, the consumer's chunk.
int64_t Msg(bool fwd, int64_t g, int chunk) { return (g << 8) | (int64_t(chunk) << 1) | (fwd ? 1 : 0); }

class Generator {
 public:
  Generator(const TrainingSpec& s, const Cluster& cluster) : s_(s), cluster_(cluster) {}

  absl::StatusOr<Workload> Build() {
    const int P = s_.pp, D = s_.dp, T = s_.tp;
    V_ = P * ChunksPerStage();
    tokens_ = double(s_.micro_batch_size) * s_.model.sequence;
    LayOutLayers();
    TimeCompute();
    w_.name = absl::StrCat(s_.model.name, " pp", P, " dp", D, " tp", T, s_.pp_inner ? " pp-inner " : " ",
                           PipelineScheduleName(s_.schedule));
    w_.iterations = s_.iterations;
    w_.warmup = s_.warmup;
    // Comms: a pipeline per (replica, tp rank), a data-parallel comm and an
    // expert comm per (stage, tp rank).
    pp_comm_.assign(size_t(D * T), -1);
    dp_comm_.assign(size_t(P * T), -1);
    ep_comm_.assign(size_t(P * T), -1);
    for (int d = 0; d < D && P > 1; ++d) {
      for (int t = 0; t < T; ++t) {
        CommSpec c{absl::StrCat("pp.dp", d, ".tp", t), {}, TrafficClass::kP2P, true};
        for (int p = 0; p < P; ++p) c.ranks.push_back(RankOf(p, d, t));
        pp_comm_[size_t(d * T + t)] = int(w_.comms.size());
        w_.comms.push_back(std::move(c));
      }
    }
    for (int p = 0; p < P && D > 1; ++p) {
      for (int t = 0; t < T; ++t) {
        CommSpec c{absl::StrCat("dp.stage", p, ".tp", t), {}, TrafficClass::kDense, false};
        for (int d = 0; d < D; ++d) c.ranks.push_back(RankOf(p, d, t));
        dp_comm_[size_t(p * T + t)] = int(w_.comms.size());
        w_.comms.push_back(c);
        if (s_.moe_every > 0) {
          c.name = absl::StrCat("ep.stage", p, ".tp", t);
          c.traffic_class = TrafficClass::kSparse;
          ep_comm_[size_t(p * T + t)] = int(w_.comms.size());
          w_.comms.push_back(std::move(c));
        }
      }
    }
    items_.resize(size_t(P));
    for (int p = 0; p < P; ++p) items_[size_t(p)] = StageItems(s_, p);
    // Per ordered stage pair, the messages in the sender's order.
    for (int a = 0; a < P; ++a) {
      for (const Item& item : items_[size_t(a)]) {
        const int vs = item.chunk * P + a;
        const int to = item.fwd ? vs + 1 : vs - 1;
        if (to < 0 || to >= V_ || to % P == a) continue;
        order_[{a, to % P}].push_back({Msg(item.fwd, item.g, to / P), item.it});
      }
    }
    w_.ranks.resize(size_t(s_.ranks()));
    for (int p = 0; p < P; ++p) {
      for (int d = 0; d < D; ++d) {
        for (int t = 0; t < T; ++t) w_.ranks[size_t(RankOf(p, d, t))] = Rank(p, d, t);
      }
    }
    return std::move(w_);
  }

 private:
  int ChunksPerStage() const { return s_.schedule == PipelineSchedule::kInterleaved ? s_.chunks : 1; }
  int RankOf(int p, int d, int t) const {
    return s_.pp_inner ? (d * s_.pp + p) * s_.tp + t : (p * s_.dp + d) * s_.tp + t;
  }

  // Layers of each virtual stage (the first ones take one more when they
  // do not divide), and DDP buckets over them.
  void LayOutLayers() {
    first_layer_.assign(size_t(V_) + 1, 0);
    for (int v = 0; v < V_; ++v) first_layer_[size_t(v) + 1] = first_layer_[size_t(v)] + s_.model.layers / V_ + (v < s_.model.layers % V_ ? 1 : 0);
    buckets_.resize(size_t(V_));
    const double cap = s_.bucket_mb * 1024 * 1024;
    for (int v = 0; v < V_; ++v) {
      // Back to front, as backward produces them; a bucket holds >= 1 layer.
      double bytes = 0;
      for (int l = first_layer_[size_t(v) + 1] - 1; l >= first_layer_[size_t(v)]; --l) {
        double layer = s_.model.LayerParams();
        if (l == 0) layer += s_.model.EmbeddingParams();
        if (l == s_.model.layers - 1) layer += double(s_.model.vocabulary) * s_.model.hidden;  // the output layer
        layer *= double(s_.grad_bytes) / s_.tp;
        if (buckets_[size_t(v)].empty() || bytes + layer > cap) {
          buckets_[size_t(v)].push_back({l, 0});
          bytes = 0;
        }
        buckets_[size_t(v)].back().front_layer = l;
        buckets_[size_t(v)].back().bytes += layer;
        bytes += layer;
      }
    }
  }

  // Nanoseconds of each layer's forward and backward, per micro-batch.
  void TimeCompute() {
    const ModelSpec& m = s_.model;
    const double t = s_.tp;
    double fwd = s_.gpu.Seconds(m.LayerForwardFlops(tokens_) / t, m.LayerForwardBytes(tokens_) / t);
    double tp_comm = 0;
    if (s_.tp > 1) {
      // Two all-reduces of the layer's output each way, at the node's
      // GPU-to-GPU rate.
      ClusterLinks links(cluster_);
      double rate = 0;
      for (LinkIx l : links.RankPath(0, 1)) {
        const double r = links.specs()[size_t(l)].bytes_per_s;
        if (r > 0 && (rate == 0 || r < rate)) rate = r;
      }
      if (rate == 0) rate = 1e12;
      const double bytes = tokens_ * m.hidden * 2;
      tp_comm = 2 * (2.0 * (t - 1) / t * bytes / rate + 2 * (t - 1) * cluster_.local_latency_ns * 1e-9);
    }
    layer_fwd_ns_ = int64_t((fwd + tp_comm) * 1e9);
    layer_bwd_ns_ = int64_t((2 * fwd + tp_comm) * 1e9);
    const double head = s_.gpu.Seconds(m.HeadForwardFlops(tokens_) / t, 2.0 * m.vocabulary * m.hidden / t);
    head_fwd_ns_ = int64_t(head * 1e9);
    head_bwd_ns_ = 2 * head_fwd_ns_;
  }

  bool IsMoe(int layer) const { return s_.moe_every > 0 && s_.dp > 1 && (layer + 1) % s_.moe_every == 0; }

  NcclCall MoeCall(int p, int t) const {
    NcclCall c;
    c.func = NcclFunc::kAlltoAll;
    c.comm = ep_comm_[size_t(p * s_.tp + t)];
    c.bytes = uint64_t(tokens_ * s_.model.hidden * 2 * 2 / s_.tp / s_.dp);
    c.reduce = sched::ReduceKind::kNone;
    c.traffic_class = TrafficClass::kSparse;
    return c;
  }

  // The compute of one item's layers (with MoE all-to-alls between them);
  // on the last backward of an iteration, layer by layer with the buckets'
  // all-reduces.
  void Layers(ProgramBuilder& b, const Item& item, int p, int t, bool last_backward) {
    const int vs = item.chunk * s_.pp + p;
    const int lo = first_layer_[size_t(vs)], hi = first_layer_[size_t(vs) + 1];
    int64_t pending = 0;
    auto flush = [&] {
      if (pending > 0) b.Compute(kCompute, pending);
      pending = 0;
    };
    if (item.fwd) {
      for (int l = lo; l < hi; ++l) {
        pending += layer_fwd_ns_;
        if (IsMoe(l)) {
          flush();
          b.Comm(kCompute, {MoeCall(p, t)});
          b.Comm(kCompute, {MoeCall(p, t)});
        }
      }
      if (vs == V_ - 1) pending += head_fwd_ns_;
      flush();
      return;
    }
    if (vs == V_ - 1) pending += head_bwd_ns_;
    const std::vector<Bucket>& buckets = buckets_[size_t(vs)];
    size_t k = 0;
    for (int l = hi - 1; l >= lo; --l) {
      if (IsMoe(l)) {
        flush();
        b.Comm(kCompute, {MoeCall(p, t)});
        b.Comm(kCompute, {MoeCall(p, t)});
      }
      pending += layer_bwd_ns_;
      const int dp = dp_comm_[size_t(p * s_.tp + t)];
      if (!last_backward || dp < 0) continue;
      while (k < buckets.size() && buckets[k].front_layer > l) ++k;
      if (k >= buckets.size() || buckets[k].front_layer != l) continue;
      flush();
      b.Record(kCompute, Key(Ev::kBucketReady, item.it, (vs << 8) | int(k)));
      b.Wait(kDense, Key(Ev::kBucketReady, item.it, (vs << 8) | int(k)));
      NcclCall c;
      c.func = NcclFunc::kAllReduce;
      c.comm = dp;
      c.bytes = uint64_t(buckets[k].bytes) / 4 * 4;
      c.elem_bytes = uint32_t(s_.grad_bytes);
      c.traffic_class = TrafficClass::kDense;
      c.tag.layer = l;
      c.tag.stage = p;
      c.tag.iteration = item.it;
      c.tag.phase = TRIRACE_PHASE_BACKWARD;
      c.tag.traffic_class = TRIRACE_CLASS_DENSE;
      b.Comm(kDense, {c});
    }
    flush();
  }

  NcclCall P2PCall(bool send, int p, int d, int t, int peer_stage, const Item& item, bool fwd) const {
    NcclCall c;
    c.func = send ? NcclFunc::kSend : NcclFunc::kRecv;
    c.comm = pp_comm_[size_t(d * s_.tp + t)];
    c.peer = peer_stage;
    c.bytes = uint64_t(tokens_ * s_.model.hidden * 2 / s_.tp);
    c.traffic_class = TrafficClass::kP2P;
    c.tag.stage = p;
    c.tag.micro_batch = int32_t(item.g % s_.microbatches);
    c.tag.iteration = item.it;
    c.tag.phase = fwd ? TRIRACE_PHASE_FORWARD : TRIRACE_PHASE_BACKWARD;
    c.tag.traffic_class = TRIRACE_CLASS_P2P;
    return c;
  }

  RankProgram Rank(int p, int d, int t) {
    const int P = s_.pp;
    // A send and a receive stream per peer stage.
    std::map<int, int> send_stream, recv_stream;
    int streams = kFirstPeerStream;
    for (int q : {(p + 1) % P, (p + P - 1) % P}) {
      if (q == p || send_stream.count(q)) continue;
      send_stream[q] = streams++;
      recv_stream[q] = streams++;
    }
    ProgramBuilder b(streams);
    const std::vector<Item>& items = items_[size_t(p)];
    // Each iteration's first and last item here.
    std::vector<size_t> first(size_t(s_.iterations), items.size()), last(size_t(s_.iterations), 0);
    std::vector<std::vector<size_t>> last_backward(size_t(s_.iterations), std::vector<size_t>(size_t(ChunksPerStage()), items.size()));
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      first[size_t(it.it)] = std::min(first[size_t(it.it)], i);
      last[size_t(it.it)] = std::max(last[size_t(it.it)], i);
      if (!it.fwd) last_backward[size_t(it.it)][size_t(it.chunk)] = i;
    }
    const double stage_params = double(first_layer_[size_t(V_)]) / V_ * s_.model.LayerParams() * ChunksPerStage() / s_.tp;
    const int64_t optimizer_ns = int64_t(stage_params * 16 / (s_.gpu.mem_gbytes_per_s * 1e9) * 1e9);
    const bool flush_each = s_.schedule != PipelineSchedule::k2BW;
    const bool has_dp = dp_comm_[size_t(p * s_.tp + t)] >= 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& item = items[i];
      if (i == first[size_t(item.it)]) {
        const int it = item.it;
        if (it == 0) b.Stamp(kCompute, 0);
        if (it >= 2) b.HostWait(Key(Ev::kIterationEnd, it - 2));  // one iteration of look-ahead
        b.IterationBegin(it);
        if (!flush_each && it >= 2 && has_dp) {
          b.Wait(kCompute, Key(Ev::kDenseDone, it - 2));
          b.Compute(kCompute, optimizer_ns);
        }
        // This iteration's receives, per sender in its order.
        for (const auto& [q, stream] : recv_stream) {
          auto o = order_.find({q, p});
          if (o == order_.end()) continue;
          for (const auto& [msg, msg_it] : o->second) {
            if (msg_it != it) continue;
            const bool fwd = msg & 1;
            Item m{fwd, msg >> 8, int((msg >> 1) & 127), it};
            b.Comm(stream, {P2PCall(false, p, d, t, q, m, fwd)});
            b.Record(stream, Key(Ev::kRecv, msg));
          }
        }
      }
      const int vs = item.chunk * P + p;
      const int from = item.fwd ? vs - 1 : vs + 1;
      if (from >= 0 && from < V_ && from % P != p) b.Wait(kCompute, Key(Ev::kRecv, Msg(item.fwd, item.g, item.chunk)));
      const bool last_bwd = !item.fwd && last_backward[size_t(item.it)][size_t(item.chunk)] == i;
      Layers(b, item, p, t, last_bwd);
      const int to = item.fwd ? vs + 1 : vs - 1;
      if (to >= 0 && to < V_ && to % P != p) {
        const int q = to % P;
        const int64_t msg = Msg(item.fwd, item.g, to / P);
        b.Record(kCompute, Key(Ev::kSend, msg));
        b.Wait(send_stream[q], Key(Ev::kSend, msg));
        b.Comm(send_stream[q], {P2PCall(true, p, d, t, q, item, item.fwd)});
      }
      if (i == last[size_t(item.it)]) {
        const int it = item.it;
        if (has_dp) b.Record(kDense, Key(Ev::kDenseDone, it));
        if (flush_each && has_dp) b.Wait(kCompute, Key(Ev::kDenseDone, it));
        if (flush_each) b.Compute(kCompute, optimizer_ns);
        b.Stamp(kCompute, it + 1);
        b.Record(kCompute, Key(Ev::kIterationEnd, it));
        b.IterationEnd(it);
      }
    }
    return b.Take();
  }

  struct Bucket {
    int front_layer = 0;
    double bytes = 0;
  };

  const TrainingSpec& s_;
  const Cluster& cluster_;
  Workload w_;
  int V_ = 1;
  double tokens_ = 0;
  std::vector<int> first_layer_;
  std::vector<std::vector<Bucket>> buckets_;
  int64_t layer_fwd_ns_ = 0, layer_bwd_ns_ = 0, head_fwd_ns_ = 0, head_bwd_ns_ = 0;
  std::vector<int> pp_comm_, dp_comm_, ep_comm_;
  std::vector<std::vector<Item>> items_;
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int>>> order_;  // (from, to) -> (msg, iteration)
};

}  // namespace

std::optional<PipelineSchedule> PipelineScheduleFromName(const std::string& name) {
  if (name == "1f1b") return PipelineSchedule::k1F1B;
  if (name == "interleaved") return PipelineSchedule::kInterleaved;
  if (name == "2bw") return PipelineSchedule::k2BW;
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  return std::nullopt;
}

const char* PipelineScheduleName(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::k1F1B: return "1f1b";
    case PipelineSchedule::kInterleaved: return "interleaved";
    case PipelineSchedule::k2BW: return "2bw";
    case PipelineSchedule::kGPipe: return "gpipe";
  }
  return "?";
}

absl::Status ValidateTraining(const TrainingSpec& s, const Cluster& cluster) {
  auto bad = [](std::string m) { return absl::InvalidArgumentError(std::move(m)); };
  if (s.pp < 1 || s.dp < 1 || s.tp < 1) return bad("--pp, --dp and --tp must be >= 1");
  if (s.ranks() != cluster.ranks()) {
    return bad(absl::StrCat("--pp ", s.pp, " x --dp ", s.dp, " x --tp ", s.tp, " = ", s.ranks(), " GPUs, but cluster ",
                            cluster.name, " has ", cluster.ranks(), " (", cluster.hosts(), " hosts x ",
                            cluster.ranks_per_host, "; --hosts changes it)"));
  }
  if (cluster.ranks_per_host % s.tp != 0) {
    return bad(absl::StrCat("--tp ", s.tp, ": tensor parallelism stays inside a node and must divide its ",
                            cluster.ranks_per_host, " GPUs"));
  }
  if (s.model.heads % s.tp != 0) {
    return bad(absl::StrCat("--tp ", s.tp, " must divide ", s.model.name, "'s ", s.model.heads, " attention heads"));
  }
  const int chunks = s.schedule == PipelineSchedule::kInterleaved ? s.chunks : 1;
  if (chunks < 1) return bad(absl::StrCat("--chunks ", s.chunks, ": expected >= 1"));
  if (s.pp * chunks > s.model.layers) {
    return bad(absl::StrCat("--pp ", s.pp, chunks > 1 ? absl::StrCat(" x --chunks ", chunks) : "", " = ", s.pp * chunks,
                            " stages, more than the ", s.model.layers, " layers of ", s.model.name));
  }
  if (s.microbatches < 1) return bad(absl::StrCat("--microbatches ", s.microbatches, ": expected >= 1"));
  if (s.schedule == PipelineSchedule::kInterleaved && s.microbatches % s.pp != 0) {
    return bad(absl::StrCat("--microbatches ", s.microbatches, ": the interleaved schedule needs a multiple of --pp ", s.pp));
  }
  if (s.iterations < 1) return bad(absl::StrCat("--iterations ", s.iterations, ": expected >= 1"));
  if (s.warmup < 0 || s.warmup >= s.iterations) {
    return bad(absl::StrCat("--warmup ", s.warmup, ": expected 0 to --iterations - 1 (", s.iterations - 1, ")"));
  }
  if (s.micro_batch_size < 1) return bad(absl::StrCat("--micro-batch-size ", s.micro_batch_size, ": expected >= 1"));
  if (!(s.bucket_mb > 0)) return bad(absl::StrCat("--bucket-mb ", s.bucket_mb, ": expected > 0"));
  if (!(s.gpu.tflops > 0) || !(s.gpu.mem_gbytes_per_s > 0)) return bad("--tflops and --mem-gbps must be > 0");
  if (s.moe_every < 0) return bad(absl::StrCat("--moe-every ", s.moe_every, ": expected >= 0"));
  return absl::OkStatus();
}

absl::StatusOr<Workload> TransformerWorkload(const TrainingSpec& spec, const Cluster& cluster) {
  if (absl::Status s = ValidateTraining(spec, cluster); !s.ok()) return s;
  return Generator(spec, cluster).Build();
}

}  // namespace trirace::sim
