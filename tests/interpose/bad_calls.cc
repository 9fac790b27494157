// bad_calls: one rank of a job that makes NCCL calls with bad arguments,
// for the shim's bad-input tests (tests/interpose/bad_input_test.cc). Every
// call goes through the dynamic linker (dlsym(RTLD_DEFAULT)), so it reaches
// the shim when it is preloaded, hostccl otherwise.
//
// Each bad call is announced on stderr with a line "mark <label>" just
// before it is made, and its return code printed on stdout as
// "bad <label> rc=<code>", so the test can count the warning lines each
// call caused. After the bad calls, valid ones on the same communicator
// check that nothing was lost: "valid <label> ok=<0|1> ..." (a chunked
// all-reduce, a broadcast and a send/recv ring, results compared with the
// expected values).
//
// --case selects what is tried:
//   comm    a destroyed communicator and garbage ones (an address in a page
//           that cannot be read, and a block of junk bytes)
//   stream  NULL streams (valid: the default host stream), a stream value
//           hostccl never made (in a page that cannot be read) and a
//           destroyed host stream
//   count   counts whose byte size overflows size_t
//   type    unknown datatypes and reduction ops; a PreMulSum op (valid)
//   peer    send/recv peers and roots outside the comm
//   create  every way of creating a comm (none may be refused)
//   group   ncclGroupStart with calls in it, then the process returns from
//           main without ncclGroupEnd (it must exit, not hang)
//   abort   rank 0 issues a chunked all-reduce rank 1 never joins, so the
//           first chunk blocks and the scheduler holds the rest; then every
//           rank calls ncclCommAbort and exits
//   real    --lib is the real NCCL (no GPU needed): a comm it never made,
//           which it reads through (one process, --rank 0 --nranks 2)
//
// usage: bad_calls --lib <libnccl> --rank R --nranks N --case NAME [--uid HEX]
// Rank 0 without --uid prints "uid <hex>" first (see rank_launcher.h).
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
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

using StreamFn = ncclResult_t (*)(cudaStream_t);
using StreamCreateFn = ncclResult_t (*)(cudaStream_t*);
StreamCreateFn g_stream_create;
StreamFn g_stream_sync;
StreamFn g_stream_destroy;

int g_rank = 0, g_nranks = 0;

// Announces the next bad call on stderr (the test counts the warnings after it).
void Mark(const std::string& label) {
  std::fprintf(stderr, "mark %s\n", label.c_str());
  std::fflush(stderr);
}

void Report(const std::string& label, ncclResult_t rc) {
  std::printf("bad %s rc=%d\n", label.c_str(), static_cast<int>(rc));
  std::fflush(stdout);
}

// Runs `call` as the bad call `label`.
template <typename Call>
void Bad(const std::string& label, Call call) {
  Mark(label);
  Report(label, call());
}

// A page that cannot be read: the shim must never look behind a pointer
// into it (a read is a SIGSEGV, which the test would see).
void* UnreadablePage() {
  void* p = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(3);
  }
  return p;
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Valid calls on `comm` after the bad ones: a 64 KiB int32 all-reduce (split
// into chunks when TRIRACE_CHUNK_BYTES is small), a broadcast from the last
// rank and a send/recv ring in a group. Prints one "valid" line; false when
// a result is wrong.
bool CheckValid(const std::string& label, ncclComm_t comm, cudaStream_t stream) {
  Mark("valid-" + label);  // ends the window of the bad call before
  int rank = 0, nranks = 0;
  NCCL(ncclCommUserRank)(comm, &rank);
  NCCL(ncclCommCount)(comm, &nranks);
  std::vector<int32_t> in(16384), out(in.size(), -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = rank + static_cast<int32_t>(i);
  const ncclResult_t ar = NCCL(ncclAllReduce)(in.data(), out.data(), in.size(), ncclInt32, ncclSum, comm, stream);
  std::vector<int64_t> bc(1000, rank);
  const ncclResult_t bcr = NCCL(ncclBroadcast)(bc.data(), bc.data(), bc.size(), ncclInt64, nranks - 1, comm, stream);
  int32_t send = 100 + rank, recv = -1;
  NCCL(ncclGroupStart)();
  const ncclResult_t s = NCCL(ncclSend)(&send, 1, ncclInt32, (rank + 1) % nranks, comm, stream);
  const ncclResult_t r = NCCL(ncclRecv)(&recv, 1, ncclInt32, (rank + nranks - 1) % nranks, comm, stream);
  const ncclResult_t g = NCCL(ncclGroupEnd)();
  const ncclResult_t sync = g_stream_sync(stream);
  bool ok = ar == ncclSuccess && bcr == ncclSuccess && s == ncclSuccess && r == ncclSuccess && g == ncclSuccess &&
            sync == ncclSuccess;
  for (size_t i = 0; ok && i < out.size(); ++i) {
    ok = out[i] == nranks * static_cast<int32_t>(i) + nranks * (nranks - 1) / 2;
  }
  for (size_t i = 0; ok && i < bc.size(); ++i) ok = bc[i] == nranks - 1;
  ok = ok && recv == 100 + (rank + nranks - 1) % nranks;
  std::printf("valid %s ok=%d allreduce=%d broadcast=%d ring=%d/%d/%d sync=%d\n", label.c_str(), ok ? 1 : 0, ar, bcr,
              s, r, g, sync);
  std::fflush(stdout);
  return ok;
}

// A destroyed communicator and garbage ones. The real NCCL reads
// comm->startMagic first (CommCheck): through a garbage pointer that is a
// SIGSEGV, and a destroyed comm has been freed (use after free). hostccl
// looks handles up in its table and never reads through them.
void CaseComm(ncclComm_t world, cudaStream_t stream) {
  ncclComm_t child = nullptr;
  if (NCCL(ncclCommSplit)(world, 0, g_rank, &child, nullptr) != ncclSuccess || child == nullptr) std::exit(6);
  CheckValid("child", child, stream);
  std::printf("destroy child rc=%d\n", NCCL(ncclCommDestroy)(child));
  int32_t a[4] = {1, 2, 3, 4}, b[4] = {0};
  int n = -1;
  ncclResult_t async = ncclSuccess;
  Bad("destroyed-allreduce", [&] { return NCCL(ncclAllReduce)(a, b, 4, ncclInt32, ncclSum, child, stream); });
  Bad("destroyed-send", [&] { return NCCL(ncclSend)(a, 4, ncclInt32, (g_rank + 1) % g_nranks, child, stream); });
  Bad("destroyed-count", [&] { return NCCL(ncclCommCount)(child, &n); });
  Bad("destroyed-destroy", [&] { return NCCL(ncclCommDestroy)(child); });

  auto* page = static_cast<ncclComm_t>(UnreadablePage());
  std::vector<unsigned char> junk(1 << 20, 0xA5);
  auto* junk_comm = reinterpret_cast<ncclComm_t>(junk.data());
  for (const auto& named : {std::pair<std::string, ncclComm_t>{"unreadable", page}, {"junk", junk_comm}}) {
    // Plain copies: a lambda may not capture a structured binding (clang 14).
    const std::string& name = named.first;
    ncclComm_t bad = named.second;
    ncclComm_t split = nullptr;
    Bad(name + "-allreduce", [&] { return NCCL(ncclAllReduce)(a, b, 4, ncclInt32, ncclSum, bad, stream); });
    Bad(name + "-broadcast", [&] { return NCCL(ncclBroadcast)(a, b, 4, ncclInt32, 0, bad, stream); });
    Bad(name + "-recv", [&] { return NCCL(ncclRecv)(b, 4, ncclInt32, 0, bad, stream); });
    Bad(name + "-count", [&] { return NCCL(ncclCommCount)(bad, &n); });
    Bad(name + "-userrank", [&] { return NCCL(ncclCommUserRank)(bad, &n); });
    Bad(name + "-asyncerror", [&] { return NCCL(ncclCommGetAsyncError)(bad, &async); });
    Bad(name + "-split", [&] { return NCCL(ncclCommSplit)(bad, 0, 0, &split, nullptr); });
    Bad(name + "-finalize", [&] { return NCCL(ncclCommFinalize)(bad); });
    Bad(name + "-destroy", [&] { return NCCL(ncclCommDestroy)(bad); });
    Bad(name + "-abort", [&] { return NCCL(ncclCommAbort)(bad); });
    Mark(name + "-role");
    std::printf("bad %s-role rc=%d\n", name.c_str(), trirace_set_comm_role(bad, TRIRACE_ROLE_PIPELINE));
  }
  // Inside a group the bad call fails the whole group, as NCCL fails it.
  NCCL(ncclGroupStart)();
  Bad("group-junk-send", [&] { return NCCL(ncclSend)(a, 4, ncclInt32, 0, junk_comm, stream); });
  Bad("group-junk-end", [&] { return NCCL(ncclGroupEnd)(); });
  CheckValid("world", world, stream);
}

// NULL streams are valid (hostccl's default host stream, CUDA's legacy
// default stream); a stream hostccl never made, or one destroyed, is not.
void CaseStream(ncclComm_t world, cudaStream_t stream) {
  CheckValid("null-stream", world, nullptr);
  auto foreign = static_cast<cudaStream_t>(UnreadablePage());
  cudaStream_t destroyed = nullptr;
  if (g_stream_create(&destroyed) != ncclSuccess || g_stream_destroy(destroyed) != ncclSuccess) std::exit(7);
  int32_t a[64] = {0}, b[64] = {0};
  for (const auto& named : {std::pair<std::string, cudaStream_t>{"foreign", foreign}, {"destroyed", destroyed}}) {
    const std::string& name = named.first;
    cudaStream_t bad = named.second;  // a copy: lambdas may not capture bindings (clang 14)
    Bad(name + "-allreduce", [&] { return NCCL(ncclAllReduce)(a, b, 64, ncclInt32, ncclSum, world, bad); });
    Bad(name + "-broadcast", [&] { return NCCL(ncclBroadcast)(a, b, 64, ncclInt32, 0, world, bad); });
    Bad(name + "-send", [&] { return NCCL(ncclSend)(a, 64, ncclInt32, (g_rank + 1) % g_nranks, world, bad); });
  }
  CheckValid("world", world, stream);
  CheckValid("null-stream-again", world, nullptr);
}

// Counts whose byte size does not fit in size_t. The buffers are small:
// whatever reads count elements from them crashes.
void CaseCount(ncclComm_t world, cudaStream_t stream) {
  int64_t a[8] = {0}, b[8] = {0};
  const size_t over4 = SIZE_MAX / 4 + 1, over8 = SIZE_MAX / 8 + 1;
  Bad("allreduce-int32", [&] { return NCCL(ncclAllReduce)(a, b, over4, ncclInt32, ncclSum, world, stream); });
  Bad("allreduce-float64", [&] { return NCCL(ncclAllReduce)(a, b, SIZE_MAX, ncclFloat64, ncclMax, world, stream); });
  Bad("broadcast-int64", [&] { return NCCL(ncclBroadcast)(a, b, over8, ncclInt64, 0, world, stream); });
  Bad("reduce-uint32", [&] { return NCCL(ncclReduce)(a, b, over4, ncclUint32, ncclMin, 0, world, stream); });
  // count * 1 fits; count * nranks (the receive buffer) does not.
  Bad("allgather-int8", [&] { return NCCL(ncclAllGather)(a, b, SIZE_MAX / 2 + 1, ncclInt8, world, stream); });
  Bad("send-float64", [&] { return NCCL(ncclSend)(a, over8, ncclFloat64, (g_rank + 1) % g_nranks, world, stream); });
  NCCL(ncclGroupStart)();
  Bad("group-allreduce-int32", [&] { return NCCL(ncclAllReduce)(a, b, over4, ncclInt32, ncclSum, world, stream); });
  Bad("group-end", [&] { return NCCL(ncclGroupEnd)(); });
  CheckValid("world", world, stream);
}

void CaseType(ncclComm_t world, cudaStream_t stream) {
  int32_t a[64] = {0}, b[64] = {0};
  for (int type : {99, -1, static_cast<int>(ncclNumTypes), INT_MIN}) {
    const auto t = static_cast<ncclDataType_t>(type);
    const std::string tag = "type" + std::to_string(type);
    Bad("allreduce-" + tag, [&] { return NCCL(ncclAllReduce)(a, b, 16, t, ncclSum, world, stream); });
    Bad("broadcast-" + tag, [&] { return NCCL(ncclBroadcast)(a, b, 16, t, 0, world, stream); });
    Bad("send-" + tag, [&] { return NCCL(ncclSend)(a, 16, t, (g_rank + 1) % g_nranks, world, stream); });
  }
  for (int op : {99, -1, static_cast<int>(ncclNumOps), INT_MAX}) {
    const auto o = static_cast<ncclRedOp_t>(op);
    Bad("allreduce-op" + std::to_string(op),
        [&] { return NCCL(ncclAllReduce)(a, b, 16, ncclInt32, o, world, stream); });
  }
  // A PreMulSum op has a value past ncclNumOps and is valid.
  Mark("valid-premulsum");
  ncclRedOp_t premul = ncclSum;
  float scalar = 2.0f;
  const ncclResult_t created = NCCL(ncclRedOpCreatePreMulSum)(&premul, &scalar, ncclFloat32, ncclScalarHostImmediate,
                                                             world);
  float fin[256], fout[256];
  for (int i = 0; i < 256; ++i) fin[i] = static_cast<float>(i + g_rank);
  const ncclResult_t ar = NCCL(ncclAllReduce)(fin, fout, 256, ncclFloat32, premul, world, stream);
  const ncclResult_t sync = g_stream_sync(stream);
  bool ok = created == ncclSuccess && ar == ncclSuccess && sync == ncclSuccess;
  for (int i = 0; ok && i < 256; ++i) {
    ok = fout[i] == 2.0f * static_cast<float>(g_nranks * i + g_nranks * (g_nranks - 1) / 2);
  }
  std::printf("valid premulsum ok=%d create=%d allreduce=%d destroy=%d\n", ok ? 1 : 0, created, ar,
              NCCL(ncclRedOpDestroy)(premul, world));
  CheckValid("world", world, stream);
}

void CasePeer(ncclComm_t world, cudaStream_t stream) {
  int32_t a[64] = {0}, b[64] = {0};
  for (int peer : {-1, g_nranks, INT_MAX, INT_MIN}) {
    const std::string tag = "peer" + std::to_string(peer);
    Bad("send-" + tag, [&] { return NCCL(ncclSend)(a, 16, ncclInt32, peer, world, stream); });
    Bad("recv-" + tag, [&] { return NCCL(ncclRecv)(b, 16, ncclInt32, peer, world, stream); });
    Bad("broadcast-root" + std::to_string(peer),
        [&] { return NCCL(ncclBroadcast)(a, b, 16, ncclInt32, peer, world, stream); });
  }
  // In a group: the bad send fails at the call, and the group's end reports it.
  NCCL(ncclGroupStart)();
  Bad("group-send-peer-1", [&] { return NCCL(ncclSend)(a, 16, ncclInt32, -1, world, stream); });
  Bad("group-end", [&] { return NCCL(ncclGroupEnd)(); });
  CheckValid("world", world, stream);
}

// Every creation path the shim wraps; an all-reduce on each must work
// (none may be refused as "never created").
void CaseCreate(ncclComm_t world, cudaStream_t stream) {
  ncclUniqueId ids[3];
  if (g_rank == 0) {
    for (ncclUniqueId& id : ids) {
      if (NCCL(ncclGetUniqueId)(&id) != ncclSuccess) std::exit(4);
    }
  }
  if (NCCL(ncclBroadcast)(ids, ids, sizeof(ids), ncclUint8, 0, world, stream) != ncclSuccess ||
      g_stream_sync(stream) != ncclSuccess) {
    std::exit(4);
  }
  ncclComm_t c = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  std::printf("create initrankconfig rc=%d\n", NCCL(ncclCommInitRankConfig)(&c, g_nranks, ids[0], g_rank, &config));
  CheckValid("initrankconfig", c, stream);
  ncclComm_t nb = nullptr;
  ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
  nonblocking.blocking = 0;
  ncclResult_t r = NCCL(ncclCommInitRankConfig)(&nb, g_nranks, ids[1], g_rank, &nonblocking);
  while (r == ncclInProgress) {
    ncclResult_t state = ncclInProgress;
    if (NCCL(ncclCommGetAsyncError)(nb, &state) != ncclSuccess) break;
    r = state;
    if (r == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("create nonblocking rc=%d\n", r);
  CheckValid("nonblocking", nb, stream);
  ncclComm_t scalable = nullptr;
  std::printf("create scalable rc=%d\n",
              NCCL(ncclCommInitRankScalable)(&scalable, g_nranks, g_rank, 1, &ids[2], nullptr));
  CheckValid("scalable", scalable, stream);
  // A split inside a group: hostccl (like NCCL) writes *newcomm at the group's end.
  ncclComm_t grouped = nullptr;
  NCCL(ncclGroupStart)();
  const ncclResult_t split = NCCL(ncclCommSplit)(world, 0, g_rank, &grouped, nullptr);
  const ncclResult_t end = NCCL(ncclGroupEnd)();
  std::printf("create split-in-group rc=%d/%d\n", split, end);
  CheckValid("split-in-group", grouped, stream);
  ncclComm_t split_nb = nullptr;
  r = NCCL(ncclCommSplit)(world, 0, g_rank, &split_nb, &nonblocking);
  while (r == ncclInProgress && split_nb != nullptr) {
    ncclResult_t state = ncclInProgress;
    if (NCCL(ncclCommGetAsyncError)(split_nb, &state) != ncclSuccess) break;
    r = state;
  }
  std::printf("create split-nonblocking rc=%d\n", r);
  CheckValid("split-nonblocking", split_nb, stream);
  // Two ranks of one comm in this process (one thread drives both: a group).
  ncclComm_t pair[2] = {nullptr, nullptr};
  std::printf("create initall rc=%d\n", NCCL(ncclCommInitAll)(pair, 2, nullptr));
  int32_t in[2][8], out[2][8];
  NCCL(ncclGroupStart)();
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 8; ++k) in[i][k] = i + k;
    NCCL(ncclAllReduce)(in[i], out[i], 8, ncclInt32, ncclSum, pair[i], stream);
  }
  const ncclResult_t pair_end = NCCL(ncclGroupEnd)();
  const ncclResult_t pair_sync = g_stream_sync(stream);
  bool ok = pair_end == ncclSuccess && pair_sync == ncclSuccess;
  for (int i = 0; ok && i < 2; ++i) {
    for (int k = 0; ok && k < 8; ++k) ok = out[i][k] == 1 + 2 * k;
  }
  std::printf("valid initall ok=%d end=%d sync=%d\n", ok ? 1 : 0, pair_end, pair_sync);
  // Shrink: hostccl does not implement it; its own error comes back.
  ncclComm_t shrunk = nullptr;
  int exclude = g_nranks - 1;
  std::printf("create shrink rc=%d\n", NCCL(ncclCommShrink)(world, &exclude, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT));
  for (ncclComm_t done : {c, nb, scalable, grouped, split_nb, pair[0], pair[1]}) {
    std::printf("destroy rc=%d\n", NCCL(ncclCommDestroy)(done));
  }
}

// Calls in a group that is never ended: returning from main must exit.
void CaseGroup(ncclComm_t world, cudaStream_t stream) {
  static int32_t a[16384], b[16384], c[16], d[16];
  std::printf("group start rc=%d\n", NCCL(ncclGroupStart)());
  std::printf("group allreduce rc=%d\n", NCCL(ncclAllReduce)(a, b, 16384, ncclInt32, ncclSum, world, stream));
  std::printf("group send rc=%d\n", NCCL(ncclSend)(c, 16, ncclInt32, (g_rank + 1) % g_nranks, world, stream));
  std::printf("group recv rc=%d\n", NCCL(ncclRecv)(d, 16, ncclInt32, (g_rank + g_nranks - 1) % g_nranks, world,
                                                  stream));
  std::printf("leaving the group open\n");
  std::fflush(stdout);
}

// The real NCCL (no GPU needed: no comm is ever made) given a comm it never
// made. It reads comm->startMagic first, through the pointer: here a page
// that cannot be read, so without the shim this process dies of SIGSEGV.
int CaseReal() {
  auto bad = static_cast<ncclComm_t>(UnreadablePage());
  int32_t a[4] = {0}, b[4] = {0};
  int n = -1;
  std::printf("version rc=%d\n", NCCL(ncclGetVersion)(&n));  // the shim starts (and says what it can do) here
  Bad("real-count", [&] { return NCCL(ncclCommCount)(bad, &n); });
  Bad("real-allreduce", [&] { return NCCL(ncclAllReduce)(a, b, 4, ncclInt32, ncclSum, bad, nullptr); });
  Bad("real-destroy", [&] { return NCCL(ncclCommDestroy)(bad); });
  Mark("end");
  std::printf("done\n");
  return 0;
}

// Rank 0's chunked all-reduce waits for rank 1, which never issues it: the
// first chunk blocks in hostccl and (policy permitting) the scheduler holds
// the others behind closed gates. Then every rank aborts the comm.
void CaseAbort(ncclComm_t world, cudaStream_t stream) {
  static int32_t a[16384], b[16384];
  if (g_rank == 0) {
    std::printf("held allreduce rc=%d\n", NCCL(ncclAllReduce)(a, b, 16384, ncclInt32, ncclSum, world, stream));
    std::printf("held broadcast rc=%d\n", NCCL(ncclBroadcast)(a, b, 16384, ncclInt32, 0, world, stream));
    std::fflush(stdout);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(g_rank == 0 ? 300 : 600));
  auto t0 = std::chrono::steady_clock::now();
  const ncclResult_t abort_rc = NCCL(ncclCommAbort)(world);
  std::printf("abort rc=%d ms=%.0f\n", abort_rc, MsSince(t0));
  std::fflush(stdout);
  t0 = std::chrono::steady_clock::now();
  const ncclResult_t sync = g_stream_sync(stream);
  std::printf("sync after abort rc=%d ms=%.0f\n", sync, MsSince(t0));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, uid, which;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--lib") lib = v;
    else if (k == "--rank") g_rank = std::atoi(v.c_str());
    else if (k == "--nranks") g_nranks = std::atoi(v.c_str());
    else if (k == "--case") which = v;
    else if (k == "--uid") uid = v;
  }
  if (lib.empty() || which.empty() || g_rank < 0 || g_nranks < 2 || g_rank >= g_nranks) {
    std::fprintf(stderr, "usage: bad_calls --lib LIB --rank R --nranks N --case NAME [--uid HEX]\n");
    return 2;
  }
  void* h = LoadRankLibrary(lib);
  if (which == "real") return CaseReal();
  g_stream_create = Lookup<StreamCreateFn>(h, "hostcclStreamCreate");
  g_stream_sync = Lookup<StreamFn>(h, "hostcclStreamSynchronize");
  g_stream_destroy = Lookup<StreamFn>(h, "hostcclStreamDestroy");

  ncclUniqueId id;
  if (const int rc = RankUniqueId(uid, &id); rc != 0) return rc;
  ncclComm_t world = nullptr;
  const ncclResult_t init = NCCL(ncclCommInitRank)(&world, g_nranks, id, g_rank);
  std::printf("init rc=%d\n", init);
  if (init != ncclSuccess) return 5;
  cudaStream_t stream = nullptr;
  if (g_stream_create(&stream) != ncclSuccess) return 7;
  if (which != "abort") CheckValid("before", world, stream);  // abort: the held op is the comm's first

  if (which == "comm") CaseComm(world, stream);
  else if (which == "stream") CaseStream(world, stream);
  else if (which == "count") CaseCount(world, stream);
  else if (which == "type") CaseType(world, stream);
  else if (which == "peer") CasePeer(world, stream);
  else if (which == "create") CaseCreate(world, stream);
  else if (which == "group") {
    CaseGroup(world, stream);
    return 0;  // the group is still open
  } else if (which == "abort") {
    CaseAbort(world, stream);
    std::printf("done\n");
    return 0;  // the comm is gone
  } else {
    std::fprintf(stderr, "bad_calls: unknown case %s\n", which.c_str());
    return 2;
  }
  std::printf("destroy world rc=%d\n", NCCL(ncclCommDestroy)(world));
  std::printf("done\n");
  return 0;
}
