// A simulation of the training loop on ideal links: how long an iteration
// of examples/hybrid_parallel takes when the network does exactly what a
// wire scheduler asks of it, and nothing costs but compute and bytes.
//
// It issues, per rank, the same stream program as trainer.cc (compute,
// stream waits and records, P2P groups, DDP bucket all-reduces, the
// embedding stage's AllGather / AlltoAll, the 2BW weight-version wait and
// the 1F1B flush, the host's look-ahead wait) and runs it with:
//   - compute taking exactly its emulated time;
//   - every transfer between hosts a fluid flow over the sender's uplink
//     and the receiver's downlink, each direction at `gbps` (with an
//     optional token bucket's burst), shared by progressive filling
//     (max-min fair); no latency, no headers, no loss;
//   - the transfers of one connection (sender, receiver, class) in the
//     order they were posted, as a TCP stream moves them: only the oldest
//     gets a share, so an eager send queued behind another does not slow
//     the one before it down;
//   - transfers within a host taking no time;
//   - a P2P transfer starting when the send is at its stream's head (sends
//     are eager and buffered, as on the TCP plugin: the matching receive
//     only waits for the bytes); a collective's when every member is at
//     its stream's head; a ring collective as one flow per member to its
//     successor carrying its ring bytes.
// With WireOrder::kClassPriority the links serve P2P, then SPARSE, then
// DENSE (strict priority, what TriRace's class priority aims at, with DENSE
// filling every byte P2P leaves); kFrontStageFirst adds TriRace's rule
// [R14]: the DENSE of a rank that holds its host's front stage of its
// pipeline (the lowest stage of its replica among two or more on the host)
// is served at SPARSE's level; with kShared all flows share alike (no
// classes; a fair stand-in for no scheduling, kinder than a host's shared
// interface queue, where one connection's message waits behind another
// connection's backlog).
//
// So `kFrontStageFirst` is what TriRace's strategy can reach at best on this
// loop (`kClassPriority` what class priority alone can): a measured trirace
// time near it has nothing left for the wire to win, and off / it is the
// most any such scheduler can show.
//
// Pure C++ (no NCCL). Thread-compatible.
#ifndef EXAMPLES_HYBRID_PARALLEL_SIMULATE_H_
#define EXAMPLES_HYBRID_PARALLEL_SIMULATE_H_

#include <string>
#include <vector>

#include "config.h"

namespace hybrid {

enum class WireOrder {
  kClassPriority,    // P2P before SPARSE before DENSE on every link
  kFrontStageFirst,  // the same, with the front stages' DENSE at SPARSE's level
  kShared,           // one class: every flow shares alike
};

struct SimOptions {
  int ranks_per_host = 1;  // rank r runs on host r / ranks_per_host
  double gbps = 1;         // each direction of each host's link
  WireOrder order = WireOrder::kClassPriority;
  // A token bucket per link direction, as tc's tbf shapes a test bed's
  // links: up to burst_bytes go at line_gbps after an idle spell, then
  // gbps. 0 = no bucket (burst_bytes below a 9000-byte frame is none).
  double burst_bytes = 0;
  double line_gbps = 10;
};

struct SimResult {
  // Per iteration, the slowest rank's time (as the example reports it).
  std::vector<double> iteration_ms;
  // Median over the iterations after c.warmup.
  double median_ms = 0;
};

// Simulates c (model flags; the process identity is ignored). False with
// *error naming the problem for a bad config or options.
bool SimulateTraining(const Config& c, const SimOptions& options, SimResult* result,
                      std::string* error);

// The bytes one iteration puts on each host's link, per direction, summed
// from the transfers of the same stream program the simulation runs (P2P
// activations and gradients, ring all-reduce 2(D-1)/D of a bucket per rank,
// ring AllGather, AlltoAll per peer; payload only, no headers). Traffic
// between ranks of one host stays off the links. Index = host, rank r on
// host r / ranks_per_host. False with *error like SimulateTraining.
struct LinkBytes {
  std::vector<double> tx;  // bytes each host sends
  std::vector<double> rx;  // bytes each host receives
};
bool LinkBytesPerIteration(const Config& c, int ranks_per_host, LinkBytes* out, std::string* error);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_SIMULATE_H_
