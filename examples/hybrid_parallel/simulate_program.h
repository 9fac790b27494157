// The stream programs of examples/hybrid_parallel's ranks, as data: what
// simulate.cc runs. Internal to the simulation.
//
// BuildProgram issues, per rank, the operations trainer.cc enqueues, on the
// same three streams (compute, dense, sparse), and matches the ranks'
// communication: the k-th send from a to b with the k-th receive at b from
// a, the k-th collective call of every member of a stage's communicator.
// Each match becomes one or more Transfers (flows between hosts) that the
// posting ops start and the owning ops wait for.
//
// Pure C++ (no NCCL). Thread-compatible.
#ifndef EXAMPLES_HYBRID_PARALLEL_SIMULATE_PROGRAM_H_
#define EXAMPLES_HYBRID_PARALLEL_SIMULATE_PROGRAM_H_

#include <string>
#include <vector>

#include "config.h"

namespace hybrid::sim {

inline constexpr int kNone = -1;
enum Stream { kCompute = 0, kDense = 1, kSparse = 2, kStreams = 3 };
enum class Cls { kP2P = 0, kSparse = 1, kDense = 2 };
enum class Kind {
  kCompute,  // runs for `us`
  kWait,     // a stream wait: done once `wait_for` is
  kMark,     // an event record or a time stamp: done when reached
  kComm,     // posts its transfers; done when those it owns are
};

struct Op {
  Kind kind = Kind::kMark;
  int rank = 0;
  double us = 0;               // kCompute
  int wait_for = kNone;        // kWait: the op (a record) it waits for
  int host_gate = kNone;       // enqueued after the host waited for this op
  int stamp = kNone;           // kMark: iteration stamp index
  std::vector<int> posts;      // kComm: transfers it posts
  // Run state, kept by the engine.
  bool started = false, done = false;
  double end = 0;   // kCompute: when it finishes
  int pending = 0;  // kComm: transfers it waits for, not done
};

struct Transfer {
  int src_host = 0, dst_host = 0;
  int src_rank = 0, dst_rank = 0;
  double left = 0;  // bytes
  Cls cls = Cls::kP2P;
  std::vector<int> gates;   // ops that must have posted it before it moves
  std::vector<int> owners;  // ops that wait for it
  // Run state, kept by the engine.
  int posted = 0;   // gates that have posted it
  double rate = 0;  // bytes per us, while it moves
};

struct Program {
  std::vector<Op> ops;
  std::vector<Transfer> transfers;
  // [rank * kStreams + stream]: the stream's ops (indexes into ops), in order.
  std::vector<std::vector<int>> streams;
};

// Builds the program of every rank of c, rank r on host r / ranks_per_host.
// False with *error when the ranks' calls do not match (a bug in the
// schedule, not in the caller's input).
bool BuildProgram(const Config& c, int ranks_per_host, Program* out, std::string* error);

}  // namespace hybrid::sim

#endif  // EXAMPLES_HYBRID_PARALLEL_SIMULATE_PROGRAM_H_
