// Bootstrap: the rendezvous behind ncclGetUniqueId / ncclCommInitRank.
//
// CreateUniqueId starts a small TCP server (a "root", one thread) in the
// calling process, listening on the bootstrap interface (socket.h rules,
// loopback by default), and encodes its address and a random nonce in the
// ncclUniqueId. Each rank then calls Rendezvous with the same id: it sends
// its payload (the net plugin handles its peers need) to the root, and once
// all nranks ranks have arrived the root returns every payload to every rank
// and exits. A rank that never arrives makes the others fail after
// TRIRACE_HOSTCCL_BOOTSTRAP_TIMEOUT_MS with an error naming the missing
// ranks; the root also rejects a second rank with the same number, a
// different nranks, or a stale id.
//
// Thread safety: all functions are thread-safe.
#ifndef TRIRACE_HOSTCCL_SRC_BOOTSTRAP_H_
#define TRIRACE_HOSTCCL_SRC_BOOTSTRAP_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nccl.h"

namespace trirace::hostccl {

absl::Status CreateUniqueId(ncclUniqueId* id);

// Every rank's payload, in rank order. Payloads must have the same size on
// every rank. Returns early with Aborted when *abort becomes true.
absl::StatusOr<std::vector<std::string>> Rendezvous(const ncclUniqueId& id, int rank, int nranks,
                                                    const std::string& payload,
                                                    const std::atomic<bool>* abort);

// A 64-bit digest of the id (the communicator id given to net plugins).
uint64_t UniqueIdHash(const ncclUniqueId& id);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_BOOTSTRAP_H_
