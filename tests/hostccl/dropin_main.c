/* A plain C NCCL program: nccl.h only, no hostccl header, default stream.
 * Linked without a run path, so the dynamic loader must find libnccl.so.2
 * through LD_LIBRARY_PATH, as any NCCL program would. Two ranks as
 * threads (ncclCommInitAll); ncclCommFinalize waits for the work. */
#include <stdio.h>
#include <stdlib.h>

#include <nccl.h>

#define N 100003

int main(void) {
  ncclComm_t comms[2];
  static float in[2][N], out[2][N];
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || ncclCommInitAll(comms, 2, NULL) != ncclSuccess) return 1;
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < N; ++i) in[r][i] = (float)(r + 1 + i % 3);
  }
  if (ncclGroupStart() != ncclSuccess) return 1;
  for (int r = 0; r < 2; ++r) {
    if (ncclAllReduce(in[r], out[r], N, ncclFloat, ncclSum, comms[r], NULL) != ncclSuccess) return 1;
  }
  if (ncclGroupEnd() != ncclSuccess) return 1;
  for (int r = 0; r < 2; ++r) {
    if (ncclCommFinalize(comms[r]) != ncclSuccess) return 1;
  }
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < N; ++i) {
      if (out[r][i] != (float)(3 + 2 * (i % 3))) {
        printf("rank %d element %d wrong\n", r, i);
        return 1;
      }
    }
    ncclCommDestroy(comms[r]);
  }
  printf("drop-in AllReduce correct (NCCL version %d)\n", version);
  return 0;
}
