// random_ranks: one rank of a seeded random NCCL workload, for the shim's
// equivalence tests over hostccl. Every rank derives the same plan from the
// seed: 2-4 communicators (the world and splits of it, one of which leaves
// the last rank out), driven from 1-2 threads, each running a random mix of
// every collective and of grouped send/recv rings, with random sizes,
// types, reduction ops and roots, under annotation tags. It prints, per op,
// the return code and a digest of every output buffer, and the plan of ops
// per communicator (what a trace of this rank must contain).
//
// With --errors 1 it then issues calls the library must reject (bad
// datatype, reduction op, root; a large AllReduce that a shim would split)
// and prints their return codes; they are not part of the plan. With
// --fork-exit 1 it forks after the workload, the child calls exit(0), and
// it prints "fork child exit=<code>" or "fork child hung" (20 s).
//
// usage: random_ranks --lib <libnccl> --rank R --nranks N --seed S --ops K [--errors 1] [--fork-exit 1]
//                     [--uid HEX]
// Rank 0 without --uid prints "uid <hex>" first (see rank_launcher.h).
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "common/hash.h"
#include "nccl_lookup.h"
#include "trirace/trirace.h"

namespace {

using StreamCreateFn = ncclResult_t (*)(cudaStream_t*);
using StreamSyncFn = ncclResult_t (*)(cudaStream_t);
StreamCreateFn g_stream_create;
StreamSyncFn g_stream_sync;

uint64_t Digest(const void* data, size_t n) { return trirace::Fnv1a64(data, n); }

size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

// Small integers in every type, so sums stay exact whatever the order.
void Fill(std::vector<unsigned char>& buf, ncclDataType_t t, uint64_t salt) {
  const size_t n = buf.size() / TypeSize(t);
  for (size_t i = 0; i < n; ++i) {
    const int v = static_cast<int>((salt * 31 + i * 7) % 5) + 1;
    switch (t) {
      case ncclInt8: reinterpret_cast<int8_t*>(buf.data())[i] = static_cast<int8_t>(v); break;
      case ncclUint8: buf[i] = static_cast<unsigned char>(v); break;
      case ncclInt32: reinterpret_cast<int32_t*>(buf.data())[i] = v; break;
      case ncclUint32: reinterpret_cast<uint32_t*>(buf.data())[i] = static_cast<uint32_t>(v); break;
      case ncclFloat32: reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(v); break;
      case ncclInt64: reinterpret_cast<int64_t*>(buf.data())[i] = v; break;
      case ncclUint64: reinterpret_cast<uint64_t*>(buf.data())[i] = static_cast<uint64_t>(v); break;
      default: reinterpret_cast<double*>(buf.data())[i] = v; break;
    }
  }
}

enum Kind { kAllReduce, kBroadcast, kBcast, kReduce, kReduceScatter, kAllGather, kAlltoAll, kGather, kScatter,
            kSendRecv, kKinds };
const char* const kKindNames[kKinds] = {"AllReduce", "Broadcast", "Bcast", "Reduce", "ReduceScatter", "AllGather",
                                        "AlltoAll", "Gather", "Scatter", "SendRecv"};

struct Comm {
  int plan_index;   // position in the plan (same on every rank)
  int shim_index;   // creation order on this rank, as the shim numbers it
  ncclComm_t comm = nullptr;
  int rank = 0, nranks = 0;
  int thread = 0;
  std::string log;  // what this comm's ops printed
  std::string plan; // the ops issued, for the trace check
};

void RunOps(Comm& c, uint64_t seed, int ops, cudaStream_t stream) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(c.plan_index));
  const ncclDataType_t types[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclFloat32, ncclInt64, ncclFloat64};
  const ncclRedOp_t redops[] = {ncclSum, ncclProd, ncclMax, ncclMin};
  const int n = c.nranks;
  for (int i = 0; i < ops; ++i) {
    const Kind kind = static_cast<Kind>(rng() % kKinds);
    const ncclDataType_t dt = types[rng() % 7];
    const ncclRedOp_t op = redops[rng() % 4];
    const size_t count = 1 + rng() % 3000;
    const int root = static_cast<int>(rng() % static_cast<uint64_t>(n));
    const size_t es = TypeSize(dt), bytes = count * es;
    std::vector<unsigned char> send(bytes * n), recv(bytes * n, 0), recv2(bytes, 0);
    Fill(send, dt, static_cast<uint64_t>(i * 131 + c.rank));
    trirace::TagScope scope(trirace::Tag().Layer(i).MicroBatch(c.plan_index));
    ncclResult_t r = ncclSuccess;
    std::string funcs;
    switch (kind) {
      case kAllReduce:
        r = NCCL(ncclAllReduce)(send.data(), recv.data(), count, dt, op, c.comm, stream);
        funcs = "AllReduce";
        break;
      case kBroadcast:
        r = NCCL(ncclBroadcast)(send.data(), recv.data(), count, dt, root, c.comm, stream);
        funcs = "Broadcast";
        break;
      case kBcast:
        std::memcpy(recv.data(), send.data(), bytes);
        r = NCCL(ncclBcast)(recv.data(), count, dt, root, c.comm, stream);
        funcs = "Bcast";
        break;
      case kReduce:
        r = NCCL(ncclReduce)(send.data(), recv.data(), count, dt, op, root, c.comm, stream);
        funcs = "Reduce";
        break;
      case kReduceScatter:
        r = NCCL(ncclReduceScatter)(send.data(), recv.data(), count, dt, op, c.comm, stream);
        funcs = "ReduceScatter";
        break;
      case kAllGather:
        r = NCCL(ncclAllGather)(send.data(), recv.data(), count, dt, c.comm, stream);
        funcs = "AllGather";
        break;
      case kAlltoAll:
        r = NCCL(ncclAlltoAll)(send.data(), recv.data(), count, dt, c.comm, stream);
        funcs = "AlltoAll";
        break;
      case kGather:
        r = NCCL(ncclGather)(send.data(), recv.data(), count, dt, root, c.comm, stream);
        funcs = "Gather";
        break;
      case kScatter:
        r = NCCL(ncclScatter)(send.data(), recv.data(), count, dt, root, c.comm, stream);
        funcs = "Scatter";
        break;
      default: {
        // A ring exchange in one group: send to the next rank, receive from the previous.
        ncclResult_t g = NCCL(ncclGroupStart)();
        ncclResult_t s = NCCL(ncclSend)(send.data(), count, dt, (c.rank + 1) % n, c.comm, stream);
        ncclResult_t v = NCCL(ncclRecv)(recv2.data(), count, dt, (c.rank + n - 1) % n, c.comm, stream);
        ncclResult_t e = NCCL(ncclGroupEnd)();
        r = g != ncclSuccess ? g : s != ncclSuccess ? s : v != ncclSuccess ? v : e;
        funcs = "Send Recv";
        break;
      }
    }
    const ncclResult_t sync = g_stream_sync(stream);
    // Reduce and Gather define recvbuff on the root only (NCCL semantics).
    if ((kind == kReduce || kind == kGather) && c.rank != root) std::fill(recv.begin(), recv.end(), 0);
    char line[256];
    std::snprintf(line, sizeof(line), "comm %d op %d %s count=%zu dt=%d rc=%d sync=%d out=%016" PRIx64 " %016" PRIx64
                  "\n", c.plan_index, i, kKindNames[kind], count, static_cast<int>(dt), static_cast<int>(r),
                  static_cast<int>(sync), Digest(recv.data(), recv.size()), Digest(recv2.data(), recv2.size()));
    c.log += line;
    std::snprintf(line, sizeof(line), "plan %d %d %s\n", c.shim_index, i, funcs.c_str());
    c.plan += line;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, uid;
  int rank = -1, nranks = 0, ops = 10, errors = 0, fork_exit = 0;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--lib") lib = v;
    else if (k == "--rank") rank = std::atoi(v.c_str());
    else if (k == "--nranks") nranks = std::atoi(v.c_str());
    else if (k == "--seed") seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--ops") ops = std::atoi(v.c_str());
    else if (k == "--errors") errors = std::atoi(v.c_str());
    else if (k == "--uid") uid = v;
    else if (k == "--fork-exit") fork_exit = std::atoi(v.c_str());
  }
  if (lib.empty() || rank < 0 || nranks < 2 || rank >= nranks) {
    std::fprintf(stderr, "usage: random_ranks --lib LIB --rank R --nranks N --seed S --ops K [--uid HEX]\n");
    return 2;
  }
  void* h = LoadRankLibrary(lib);
  g_stream_create = Lookup<StreamCreateFn>(h, "hostcclStreamCreate");
  g_stream_sync = Lookup<StreamSyncFn>(h, "hostcclStreamSynchronize");

  ncclUniqueId id;
  if (const int rc = RankUniqueId(uid, &id); rc != 0) return rc;

  std::mt19937_64 plan(seed);
  const int extra = 1 + static_cast<int>(plan() % 3);  // 2-4 comms in all
  const int threads = 1 + static_cast<int>(plan() % 2);
  std::vector<Comm> comms;
  Comm world;
  world.plan_index = 0;
  world.shim_index = 1;
  ncclResult_t r = NCCL(ncclCommInitRank)(&world.comm, nranks, id, rank);
  std::printf("init rc=%d\n", r);
  if (r != ncclSuccess) return 5;
  comms.push_back(world);
  int created = 1;
  for (int s = 0; s < extra; ++s) {
    // Split 0 leaves the last rank out; the others group ranks by parity or keep all.
    int color = s == 0 ? (rank == nranks - 1 ? NCCL_SPLIT_NOCOLOR : 0) : (s == 1 ? rank % 2 : 0);
    if (s == 0 && nranks == 2) color = 0;  // a one-rank comm still works, but keep two ranks
    Comm c;
    c.plan_index = s + 1;
    r = NCCL(ncclCommSplit)(comms[0].comm, color, rank, &c.comm, nullptr);
    std::printf("split %d color=%d rc=%d member=%d\n", s, color, r, c.comm != nullptr);
    if (r != ncclSuccess) return 6;
    if (c.comm == nullptr) continue;
    c.shim_index = ++created;
    comms.push_back(c);
  }
  for (auto& c : comms) {
    NCCL(ncclCommUserRank)(c.comm, &c.rank);
    NCCL(ncclCommCount)(c.comm, &c.nranks);
    c.thread = c.plan_index % threads;
  }
  // The split that groups by parity is annotated; the others are left to inference.
  for (auto& c : comms) {
    if (c.plan_index == 2) trirace_set_comm_role(c.comm, TRIRACE_ROLE_DATA_PARALLEL);
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      cudaStream_t stream = nullptr;
      if (g_stream_create(&stream) != ncclSuccess) return;
      for (auto& c : comms) {
        if (c.thread == t) RunOps(c, seed, ops, stream);
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& c : comms) std::fputs(c.log.c_str(), stdout);
  for (auto& c : comms) std::fputs(c.plan.c_str(), stdout);
  std::printf("plan 1 %d AllReduce\n", ops);  // the barrier below
  // Every rank has finished every op before any comm goes away.
  {
    cudaStream_t stream = nullptr;
    int32_t one = 1, all = 0;
    trirace::TagScope scope(trirace::Tag().Layer(ops).MicroBatch(0));
    ncclResult_t b = NCCL(ncclAllReduce)(&one, &all, 1, ncclInt32, ncclSum, comms[0].comm, stream);
    const ncclResult_t sync = g_stream_sync(stream);  // before reading `all`
    std::printf("barrier rc=%d sync=%d ranks=%d\n", b, sync, all);
    if (fork_exit != 0) {
      // A child forked while the libraries' threads run, that ends with
      // exit() (its atexit hooks run, the parent's threads do not exist).
      std::fflush(stdout);
      const pid_t child = fork();
      if (child == 0) std::exit(0);
      int status = -1;
      bool done = false;
      for (int waited_ms = 0; child > 0 && !done && waited_ms < 20000; waited_ms += 10) {
        done = waitpid(child, &status, WNOHANG) == child;
        if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (child > 0 && !done) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        std::printf("fork child hung\n");
      } else {
        std::printf("fork child exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      }
    }
    if (errors != 0) {
      std::vector<int32_t> big(20000, 1), out(20000, 0);
      ncclComm_t w = comms[0].comm;
      std::printf("error dtype rc=%d\n", NCCL(ncclAllReduce)(big.data(), out.data(), 4, static_cast<ncclDataType_t>(99),
                                                          ncclSum, w, stream));
      std::printf("error redop rc=%d\n", NCCL(ncclAllReduce)(big.data(), out.data(), big.size(), ncclInt32,
                                                          static_cast<ncclRedOp_t>(99), w, stream));
      std::printf("error root rc=%d\n", NCCL(ncclBroadcast)(big.data(), out.data(), big.size(), ncclInt32, nranks + 3,
                                                         w, stream));
      std::printf("error comm rc=%d\n", NCCL(ncclAllReduce)(big.data(), out.data(), 4, ncclInt32, ncclSum, nullptr,
                                                         stream));
      std::printf("error sync=%d\n", g_stream_sync(stream));
    }
  }
  for (auto it = comms.rbegin(); it != comms.rend(); ++it) {
    std::printf("destroy %d rc=%d\n", it->plan_index, NCCL(ncclCommDestroy)(it->comm));
  }
  return 0;
}
