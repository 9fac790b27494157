#include "simulate.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "median.h"
#include "model.h"
#include "simulate_program.h"

namespace hybrid {
namespace {

using sim::Cls;
using sim::Kind;
using sim::kNone;
using sim::kStreams;
using sim::Op;
using sim::Program;
using sim::Transfer;

// Runs the programs: the streams in order, compute for its time, transfers
// as fluid flows over the hosts' links.
class Engine {
 public:
  Engine(Program program, int hosts, int ranks, int stamps, const SimOptions& o, std::vector<bool> front)
      : ops_(std::move(program.ops)),
        transfers_(std::move(program.transfers)),
        streams_(std::move(program.streams)),
        heads_(streams_.size(), 0),
        order_(o.order),
        front_(std::move(front)),
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
    if (op.kind == Kind::kWait && op.wait_for != kNone && !ops_[size_t(op.wait_for)].done) return false;
    op.started = true;  // before posting: a transfer within a host finishes at once
    switch (op.kind) {
      case Kind::kWait:
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
        for (int t : op.posts) Post(t);
        op.done = op.pending == 0;
        break;
    }
    return true;
  }

  void Post(int t) {
    Transfer& tr = transfers_[size_t(t)];
    if (++tr.posted < int(tr.gates.size())) return;
    if (tr.src_host == tr.dst_host || tr.left <= 0) return Finish(t);  // within a host: no wire
    active_.push_back(t);
  }

  void Finish(int t) {
    for (int id : transfers_[size_t(t)].owners) {
      if (--ops_[size_t(id)].pending == 0 && ops_[size_t(id)].started) ops_[size_t(id)].done = true;
    }
  }

  // The class level a transfer is served at (0 first).
  int LevelOf(const Transfer& tr) const {
    if (tr.cls == Cls::kDense && order_ == WireOrder::kFrontStageFirst && front_[size_t(tr.src_rank)]) {
      return int(Cls::kSparse);
    }
    return int(tr.cls);
  }

  // Progressive filling per class level: every flow of a level gets the
  // fair share of its tightest link, then the next level takes what is left.
  void Allocate() {
    std::vector<double> left(size_t(2 * hosts_));  // [2h] = h.tx, [2h + 1] = h.rx
    for (size_t l = 0; l < left.size(); ++l) left[l] = at_line_[l] ? line_ : rate_;
    const int levels = order_ == WireOrder::kShared ? 1 : 3;
    for (int t : active_) transfers_[size_t(t)].rate = 0;
    // One connection (sender, receiver, class) moves its messages in the
    // order they were posted, as a TCP stream does: only its oldest active
    // transfer gets a share.
    std::set<std::tuple<int, int, int>> connections;
    std::vector<int> heads;
    for (int t : active_) {
      const Transfer& tr = transfers_[size_t(t)];
      if (connections.insert({tr.src_rank, tr.dst_rank, int(tr.cls)}).second) heads.push_back(t);
    }
    for (int level = 0; level < levels; ++level) {
      std::vector<int> open;
      for (int t : heads) {
        if (levels == 1 || LevelOf(transfers_[size_t(t)]) == level) open.push_back(t);
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
  const std::vector<bool> front_;  // [rank]: holds its host's front stage
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

bool CheckPlacement(const Config& c, int ranks_per_host, std::string* error) {
  if (!ValidateModel(c, error)) return false;
  if (ranks_per_host < 1 || c.world_size() % ranks_per_host != 0) {
    *error = "ranks per host " + std::to_string(ranks_per_host) + " must be >= 1 and divide the " +
             std::to_string(c.world_size()) + " ranks";
    return false;
  }
  return true;
}

// [rank]: whether the rank holds its host's front stage of its pipeline
// (its replica's ranks): the lowest stage among two or more on the host.
std::vector<bool> FrontStages(const Config& c, int ranks_per_host) {
  std::vector<bool> front(size_t(c.world_size()), false);
  for (int r = 0; r < c.world_size(); ++r) {
    const Place me = PlaceOf(c, r);
    bool shared = false, lowest = true;
    for (int o = 0; o < c.world_size(); ++o) {
      const Place other = PlaceOf(c, o);
      if (o == r || o / ranks_per_host != r / ranks_per_host || other.replica != me.replica) continue;
      shared = true;
      lowest = lowest && other.stage > me.stage;
    }
    front[size_t(r)] = shared && lowest;
  }
  return front;
}

}  // namespace

bool SimulateTraining(const Config& c, const SimOptions& o, SimResult* result, std::string* error) {
  if (!CheckPlacement(c, o.ranks_per_host, error)) return false;
  if (!(o.gbps > 0)) {
    *error = "link rate " + std::to_string(o.gbps) + " Gbit/s must be > 0";
    return false;
  }
  Program program;
  if (!sim::BuildProgram(c, o.ranks_per_host, &program, error)) return false;
  Engine engine(std::move(program), c.world_size() / o.ranks_per_host, c.world_size(), c.iterations + 1, o,
                FrontStages(c, o.ranks_per_host));
  if (!engine.Run(error)) return false;

  result->iteration_ms.assign(size_t(c.iterations), 0);
  for (int r = 0; r < c.world_size(); ++r) {
    for (int it = 0; it < c.iterations; ++it) {
      const double ms = (engine.Stamp(r, it + 1) - engine.Stamp(r, it)) / 1e3;
      result->iteration_ms[size_t(it)] = std::max(result->iteration_ms[size_t(it)], ms);
    }
  }
  result->median_ms = Median({result->iteration_ms.begin() + c.warmup, result->iteration_ms.end()});
  return true;
}

bool LinkBytesPerIteration(const Config& c, int ranks_per_host, LinkBytes* out, std::string* error) {
  if (!CheckPlacement(c, ranks_per_host, error)) return false;
  Program program;
  if (!sim::BuildProgram(c, ranks_per_host, &program, error)) return false;
  const int hosts = c.world_size() / ranks_per_host;
  out->tx.assign(size_t(hosts), 0);
  out->rx.assign(size_t(hosts), 0);
  // Every iteration issues the same calls, so the program's total over its
  // iterations divides evenly.
  for (const sim::Transfer& t : program.transfers) {
    if (t.src_host == t.dst_host) continue;
    out->tx[size_t(t.src_host)] += t.left / c.iterations;
    out->rx[size_t(t.dst_host)] += t.left / c.iterations;
  }
  return true;
}

}  // namespace hybrid