// peer_ranks: one rank of a job that creates communicators every way an
// application can — CommInitRank, CommSplit, two comms initialised at once
// from two threads, a comm initialised inside a group, a nonblocking comm —
// and checks an all-reduce on each (and 64 KiB ones of int32 and float on the
// world comm, which the shim may split into chunks), for the shim's peer exchange tests
// (tests/interpose/peer_exchange_test.cc). It prints "ok <name> <sum>" per
// comm, or "bad ..." and exits non-zero. Last, it declares the world comm a
// pipeline comm, sends around it, and prints "dense_ahead <0|1>", the shim's
// rule [R14] for this rank (trirace_dense_ahead()).
//
// usage: peer_ranks --lib <libnccl> --rank R --nranks N [--uid HEX]
// Rank 0 without --uid prints "uid <hex>" first (see rank_launcher.h).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "nccl_lookup.h"
#include "trirace/trirace.h"

namespace {

using StreamCreateFn = ncclResult_t (*)(cudaStream_t*);
using StreamSyncFn = ncclResult_t (*)(cudaStream_t);
StreamCreateFn g_stream_create;
StreamSyncFn g_stream_sync;

// This rank's place in `comm` and a new stream for it; false without one.
bool Place(ncclComm_t comm, int* rank, int* nranks, cudaStream_t* stream) {
  NCCL(ncclCommUserRank)(comm, rank);
  NCCL(ncclCommCount)(comm, nranks);
  return g_stream_create(stream) == ncclSuccess;
}

// All-reduces rank+1 over `comm` and checks the sum of 1..nranks.
bool Check(const char* name, ncclComm_t comm) {
  int rank = 0, nranks = 0;
  cudaStream_t stream = nullptr;
  if (!Place(comm, &rank, &nranks, &stream)) return false;
  int32_t in = rank + 1, out = 0;
  const ncclResult_t r = NCCL(ncclAllReduce)(&in, &out, 1, ncclInt32, ncclSum, comm, stream);
  const ncclResult_t s = g_stream_sync(stream);
  const int32_t want = nranks * (nranks + 1) / 2;
  if ((r != ncclSuccess && r != ncclInProgress) || s != ncclSuccess || out != want) {
    std::printf("bad %s rc=%d sync=%d sum=%d want=%d\n", name, r, s, out, want);
    return false;
  }
  std::printf("ok %s %d\n", name, out);
  return true;
}

// All-reduces 64 KiB of T (element i: rank + i, exact in float too) over
// `comm`, large enough for the shim to split where the chunk size is small,
// and checks every element. Ranks that split differently would issue
// different calls.
template <typename T>
bool CheckLarge(const char* name, ncclComm_t comm, ncclDataType_t type) {
  int rank = 0, nranks = 0;
  cudaStream_t stream = nullptr;
  if (!Place(comm, &rank, &nranks, &stream)) return false;
  std::vector<T> in(16384), out(in.size(), T(-1));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<T>(rank + static_cast<int>(i));
  const ncclResult_t r = NCCL(ncclAllReduce)(in.data(), out.data(), in.size(), type, ncclSum, comm, stream);
  const ncclResult_t s = g_stream_sync(stream);
  for (size_t i = 0; i < out.size(); ++i) {
    const int want = nranks * static_cast<int>(i) + nranks * (nranks - 1) / 2;
    if ((r != ncclSuccess && r != ncclInProgress) || s != ncclSuccess || out[i] != static_cast<T>(want)) {
      std::printf("bad %s rc=%d sync=%d element %zu=%g want=%d\n", name, r, s, i, static_cast<double>(out[i]), want);
      return false;
    }
  }
  std::printf("ok %s %d\n", name, static_cast<int>(out[0]));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, uid;
  int rank = -1, nranks = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--lib") lib = v;
    else if (k == "--rank") rank = std::atoi(v.c_str());
    else if (k == "--nranks") nranks = std::atoi(v.c_str());
    else if (k == "--uid") uid = v;
  }
  if (lib.empty() || rank < 0 || nranks < 2 || rank >= nranks) {
    std::fprintf(stderr, "usage: peer_ranks --lib LIB --rank R --nranks N [--uid HEX]\n");
    return 2;
  }
  void* h = LoadRankLibrary(lib);
  g_stream_create = Lookup<StreamCreateFn>(h, "hostcclStreamCreate");
  g_stream_sync = Lookup<StreamSyncFn>(h, "hostcclStreamSynchronize");

  ncclUniqueId id;
  if (const int rc = RankUniqueId(uid, &id); rc != 0) return rc;
  bool ok = true;
  ncclComm_t world = nullptr;
  if (NCCL(ncclCommInitRank)(&world, nranks, id, rank) != ncclSuccess) return 5;
  ok &= Check("world", world);
  ok &= CheckLarge<int32_t>("large", world, ncclInt32);
  ok &= CheckLarge<float>("large_float", world, ncclFloat32);

  ncclComm_t half = nullptr;
  if (NCCL(ncclCommSplit)(world, rank % 2, rank, &half, nullptr) != ncclSuccess) return 6;
  ok &= Check("split", half);

  // Rank 0 makes three more ids and broadcasts them over the world comm.
  ncclUniqueId more[3];
  if (rank == 0) {
    for (ncclUniqueId& m : more) {
      if (NCCL(ncclGetUniqueId)(&m) != ncclSuccess) return 4;
    }
  }
  {
    cudaStream_t stream = nullptr;
    if (g_stream_create(&stream) != ncclSuccess) return 7;
    if (NCCL(ncclBroadcast)(more, more, sizeof(more), ncclUint8, 0, world, stream) != ncclSuccess ||
        g_stream_sync(stream) != ncclSuccess) {
      return 7;
    }
  }
  // Two comms initialised at the same time from two threads.
  ncclComm_t concurrent[2] = {nullptr, nullptr};
  ncclResult_t concurrent_rc[2] = {ncclSuccess, ncclSuccess};
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back(
          [&, t] { concurrent_rc[t] = NCCL(ncclCommInitRank)(&concurrent[t], nranks, more[t], rank); });
    }
    for (std::thread& t : threads) t.join();
  }
  if (concurrent_rc[0] != ncclSuccess || concurrent_rc[1] != ncclSuccess) return 8;
  ok &= Check("thread0", concurrent[0]);
  ok &= Check("thread1", concurrent[1]);

  // One initialised inside a group.
  ncclComm_t grouped = nullptr;
  NCCL(ncclGroupStart)();
  const ncclResult_t init_rc = NCCL(ncclCommInitRank)(&grouped, nranks, more[2], rank);
  const ncclResult_t end_rc = NCCL(ncclGroupEnd)();
  if (init_rc != ncclSuccess || end_rc != ncclSuccess) return 9;
  ok &= Check("grouped", grouped);

  // A nonblocking split: polled until ready.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t nonblocking = nullptr;
  ncclResult_t nb = NCCL(ncclCommSplit)(world, 0, rank, &nonblocking, &config);
  while (nb == ncclInProgress) {
    ncclResult_t state = ncclInProgress;
    if (NCCL(ncclCommGetAsyncError)(nonblocking, &state) != ncclSuccess) return 10;
    nb = state;
  }
  if (nb != ncclSuccess) return 10;
  ok &= Check("nonblocking", nonblocking);

  // The world comm as a pipeline (rule [R14]): one value around the ring.
  trirace_set_comm_role(world, TRIRACE_ROLE_PIPELINE);
  {
    cudaStream_t stream = nullptr;
    if (g_stream_create(&stream) != ncclSuccess) return 11;
    int32_t out = rank, in = -1;
    NCCL(ncclGroupStart)();
    NCCL(ncclSend)(&out, 1, ncclInt32, (rank + 1) % nranks, world, stream);
    NCCL(ncclRecv)(&in, 1, ncclInt32, (rank + nranks - 1) % nranks, world, stream);
    if (NCCL(ncclGroupEnd)() != ncclSuccess || g_stream_sync(stream) != ncclSuccess ||
        in != (rank + nranks - 1) % nranks) {
      std::printf("bad ring in=%d\n", in);
      ok = false;
    }
  }
  std::printf("dense_ahead %d\n", trirace_dense_ahead());

  for (ncclComm_t c : {nonblocking, grouped, concurrent[1], concurrent[0], half, world}) NCCL(ncclCommDestroy)(c);
  std::printf("done\n");
  return ok ? 0 : 1;
}
