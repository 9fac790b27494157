// Sharing the NCCL unique id through a file.
//
// Rank 0 calls ncclGetUniqueId and writes the id to `path` atomically (a
// temporary file renamed into place); every other rank waits for the file
// and reads it. The path must be on a file system all ranks see and must not
// exist when the job starts (a stale id would make the ranks wait for a rank
// 0 that is gone): rank 0 refuses to overwrite it. Launchers (launch.sh,
// tools/testbed/testbed.sh) give each run a fresh path.
#ifndef EXAMPLES_HYBRID_PARALLEL_RENDEZVOUS_H_
#define EXAMPLES_HYBRID_PARALLEL_RENDEZVOUS_H_

#include <string>

#include <nccl.h>

namespace hybrid {

// Rank 0 publishes, the others wait up to timeout_s. Throws
// std::runtime_error with the path and the reason on failure.
ncclUniqueId ShareUniqueId(int rank, const std::string& path, int timeout_s);

}  // namespace hybrid

#endif  // EXAMPLES_HYBRID_PARALLEL_RENDEZVOUS_H_
