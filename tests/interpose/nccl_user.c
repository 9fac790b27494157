/* A library that calls NCCL like a framework's own code does (libtorch
 * calling ncclAllReduce). It does not link libnccl: its ncclX references
 * are bound by the dynamic linker when it is loaded, which with the shim
 * preloaded means to the shim, even though the program loaded NCCL itself
 * with RTLD_LOCAL. */
#include <string.h>

#include "nccl.h"

__attribute__((visibility("default"))) int nccl_user_run(void) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  ncclComm_t comm = NULL;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 2;
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {0};
  if (ncclAllReduce(a, b, 8, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess) return 3;
  if (memcmp(a, b, sizeof(a)) != 0) return 4;
  if (ncclCommDestroy(comm) != ncclSuccess) return 5;
  return 0;
}
