// The expected result of a run, computed without any communication: one
// process plays every rank of the model in turn and moves the data by
// direct indexing (what a correct AllReduce, AlltoAll, AllGather or
// send/recv would have delivered). Comparing a run's checksum with this one
// checks that the collectives delivered the right bytes to the right place,
// in the right order, whatever the schedule, rank order or NCCL library.
//
// Cost: about the same arithmetic as the whole job, on one thread; keep the
// configuration small when calling it often.
#ifndef EXAMPLES_HYBRID_PARALLEL_REFERENCE_H_
#define EXAMPLES_HYBRID_PARALLEL_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "config.h"

namespace hybrid {

struct Expected {
  std::vector<uint64_t> rank_hashes;  // [stage * replicas + replica]
  uint64_t checksum = 0;
};

Expected ComputeExpected(const Config& c);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_REFERENCE_H_
