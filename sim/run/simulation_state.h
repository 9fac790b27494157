// Internal to sim/run: the state of one simulated run, shared by
// simulation.cc (the event loop, hosts, streams and call matching) and
// gated_launch.cc (the shim's gated launch: engines, gates, chunks, the
// occupancy reader). Not a public header.
#ifndef TRIRACE_SIM_RUN_SIMULATION_STATE_H_
#define TRIRACE_SIM_RUN_SIMULATION_STATE_H_

#include <cstdint>
#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "scheduler/engine.h"
#include "sim/cluster/cluster_links.h"
#include "sim/nccl/collectives.h"
#include "sim/net/network.h"
#include "sim/program/program.h"
#include "sim/run/simulation.h"

namespace trirace::sim::internal {

enum class OpState : uint8_t { kIdle, kQueued, kRunning, kDone };

struct Gate {
  bool open = false;
  sched::TaskId task = 0;
  int64_t call_ns = 0;  // submitted (the call)
  int64_t open_ns = -1;
  sched::ReleaseReason reason = sched::ReleaseReason::kUngated;
  uint32_t chunk = 0, chunks = 1;
  std::optional<sched::TaskSpec> deferred;  // SimOptions::decide_at_stream: submitted when the stream gets here
};

class Simulation;

// The rank's gate opener: records the release and wakes the rank.
class RankGates final : public sched::GateOpener {
 public:
  RankGates(Simulation* sim, int rank) : sim_(sim), rank_(rank) {}
  void OpenGate(const sched::ReleasedTask& task) override;

 private:
  Simulation* sim_;
  int rank_;
};

struct RankRun {
  std::vector<StreamOp> ops;  // the program's, then the simulator's own
  std::vector<NcclCall> calls;
  std::vector<OpState> state;
  std::vector<int> pending;         // kComm: parts not done
  std::vector<int64_t> started_ns;  // when the op started
  std::vector<sched::TaskId> task;  // the engine task an op completes (0: none)
  std::unordered_map<int, sched::TaskSpec> deferred_p2p;  // op -> its task, submitted when it starts
  std::vector<std::deque<int>> queues;  // per stream
  size_t host_pc = 0;
  bool host_sleeping = false;
  bool dirty = false;
  std::vector<double> stamps;
  // Gated launch.
  std::unique_ptr<RankGates> opener;
  std::unique_ptr<sched::Engine> engine;
  std::vector<Gate> gates;
  std::unordered_map<int, int> lane_of_comm;  // comm -> its dedicated stream
  std::unordered_map<LinkIx, sched::LinkId> engine_link;
  int64_t wake_at = kNever;
  // Call matching: per comm, collectives issued; per (comm, peer, send?) messages.
  std::unordered_map<int, uint32_t> coll_seq;
  std::unordered_map<uint64_t, uint32_t> p2p_seq;
  int tx_counter = -1, rx_counter = -1;  // this rank's own NIC bytes
  bool dense_ahead = false;   // [R14]: front stage on every pipeline comm
  bool dense_behind = false;  // [R14]: behind on one
};

// Which matched call: a comm's k-th collective (src = dst = -1), or the
// k-th message from comm rank src to dst.
struct InstanceKey {
  int comm = 0, src = -1, dst = -1;
  uint32_t k = 0;
  bool operator==(const InstanceKey&) const = default;
};
struct InstanceKeyHash {
  static uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
  size_t operator()(const InstanceKey& key) const {
    const uint64_t a = (uint64_t(uint32_t(key.comm)) << 32) | key.k;
    const uint64_t b = (uint64_t(uint32_t(key.src)) << 32) | uint32_t(key.dst);
    return size_t(Mix(a ^ Mix(b)));
  }
};

// A matched collective or message, waiting for its members or in flight.
struct Instance {
  NcclFunc func = NcclFunc::kAllReduce;
  int comm = 0;
  uint64_t bytes = 0;
  int root = 0;
  TrafficClass cls = TrafficClass::kOther;
  int posted = 0;
  std::vector<std::pair<int, int>> parts;  // (rank, op) of each member's call
  // Point to point.
  bool p2p = false;
  int src = -1, dst = -1;        // global ranks
  int send_op = kNoOp, recv_op = kNoOp;
  bool flow_done = false;
  int flows_left = 0;  // a collective's transfers still moving
};

// What a flow belongs to, and the gauge bytes it returns when it ends.
struct FlowOwner {
  InstanceKey key;
  bool p2p = false;
  TrafficClass cls = TrafficClass::kOther;
  int sender = -1;  // the rank whose [R13] gauge counts it (-1: none, inside a host)
  double bytes = 0;
};

enum class EventKind : uint8_t { kComputeDone, kHostResume, kEngineWake };
struct Event {
  int64_t t;
  uint64_t seq;
  EventKind kind;
  int32_t rank;
  int32_t op;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Simulation {
 public:
  Simulation(const Cluster& cluster, const Workload& workload, const SimOptions& options);
  // Stops every engine first: a stopping engine opens the gates it still
  // holds, through GateOpened, which needs the rest of the state.
  ~Simulation();
  absl::StatusOr<ModeResult> Run();

  // gated_launch.cc
  void GateOpened(int rank, const sched::ReleasedTask& task);

 private:
  friend class SimOccupancyReader;

  // simulation.cc
  void MarkDirty(int rank);
  void ProcessRank(int rank);
  bool RunHost(int rank);
  bool AdvanceStream(int rank, int stream);
  bool TryStart(int rank, int op);
  void OpDone(int rank, int op);
  void Enqueue(int rank, int op);
  int NewOp(int rank, StreamOp op);
  void Post(int rank, int op, const NcclCall& call);
  void PartDone(int rank, int op);
  void StartCollective(const InstanceKey& key, Instance& in);
  void StartMessage(const InstanceKey& key, Instance& in);
  void Fail(std::string error);
  void FlowFinished(uint64_t cookie);
  int LevelOf(TrafficClass cls, int sender_rank) const;
  // Starts one transfer of `layout` as a flow owned by `key`.
  uint64_t NewOwner(const FlowOwner& owner);
  void StartTransfer(const Layout& layout, const Layout::Transfer& t, const InstanceKey& key, bool p2p,
                     TrafficClass cls, int level, int64_t fifo_key);
  void Push(int64_t t, EventKind kind, int rank, int op);
  std::string Stuck() const;
  TrafficClass ClassOf(const NcclCall& call) const;

  // gated_launch.cc
  void PlaceFrontStages();
  void SetUpGating();
  bool EnqueueGated(int rank, int op);
  void CompleteTask(int rank, int op);
  // SimOptions::decide_at_stream: submits what waited for the stream.
  void SubmitDeferredGate(int rank, int gate);
  void SubmitDeferredP2P(int rank, int op);
  void ScheduleWake(int rank);
  void EngineWake(int rank);
  sched::TaskSpec TaskFor(int rank, const NcclCall& call, uint64_t bytes, TrafficClass cls);
  sched::LinkId EngineLink(int rank, LinkIx link);
  const std::vector<LinkIx>& CommLinks(int comm, NcclFunc func, int root, int host);
  void StopEngines();
  uint64_t ChunkBytesOf(int comm);
  int64_t UrgentBytesBeside(int rank) const;

  const Cluster& cluster_;
  const Workload& w_;
  const SimOptions options_;
  const ModeSettings mode_;
  ClusterLinks links_;
  Network net_;
  ManualClock clock_;
  int64_t now_ = 0;
  std::vector<RankRun> ranks_;
  std::vector<int> dirty_;
  int processing_ = -1;  // the rank ProcessRank is on
  bool again_ = false;   // something changed on it meanwhile
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  uint64_t event_count_ = 0;
  std::unordered_map<InstanceKey, Instance, InstanceKeyHash> instances_;
  std::string error_;  // the first error; the run stops
  std::vector<FlowOwner> flow_owners_;  // by flow cookie; slots reused
  std::vector<uint64_t> free_owners_;
  std::vector<std::vector<int>> comm_rank_;  // [comm] global rank -> comm rank (-1)
  std::unordered_map<uint64_t, std::vector<LinkIx>> comm_links_;
  std::unordered_map<int, uint64_t> chunk_bytes_;
  // [R13] gauges: per rank and class, bytes posted to send through its NIC
  // and not finished.
  std::vector<std::array<int64_t, kNumTrafficClasses>> urgent_;
  std::vector<std::vector<int>> ranks_on_nic_;  // [rank] the other ranks sending through its NIC
  bool float_reductions_ = false;
  std::array<uint64_t, 16> release_reasons_{};
  std::vector<int64_t> hold_waits_;
};

}  // namespace trirace::sim::internal

#endif  // TRIRACE_SIM_RUN_SIMULATION_STATE_H_
