#include "hostccl/src/algorithms.h"

#include <algorithm>
#include <cstring>

#include "common/status.h"

namespace trirace::hostccl {
namespace {

struct Span {
  size_t offset = 0;
  size_t elems = 0;
};

int Mod(int a, int n) { return ((a % n) + n) % n; }

// Chunk k of `count` elements split over n ranks (the first count % n
// chunks get one element more).
Span ChunkOf(size_t count, int n, int k) {
  size_t base = count / n, rem = count % n, uk = static_cast<size_t>(k);
  return Span{uk * base + std::min(uk, rem), base + (uk < rem ? 1 : 0)};
}

// Slice j of a chunk, or elems == 0 when the chunk is shorter.
Span SliceOf(Span chunk, size_t slice_elems, size_t j) {
  size_t start = j * slice_elems;
  if (start >= chunk.elems) return Span{};
  return Span{chunk.offset + start, std::min(slice_elems, chunk.elems - start)};
}

size_t SlicesOf(size_t elems, size_t slice_elems) { return (elems + slice_elems - 1) / slice_elems; }

struct Builder {
  RingPlan plan;
  int last_in = -1;

  void Out(size_t elems, const char* src, bool contribute) {
    plan.outs.push_back(RingOut{elems, src, contribute, -1});
  }
  // Forwards the result of the previous In.
  void Forward(size_t elems) {
    plan.ins[last_in].forward = static_cast<int>(plan.outs.size());
    plan.outs.push_back(RingOut{elems, nullptr, false, last_in});
  }
  void In(size_t elems, char* dst, const char* local, bool finish) {
    last_in = static_cast<int>(plan.ins.size());
    plan.ins.push_back(RingIn{elems, dst, local, finish, -1});
  }
};

// `ring`: every rank receives and sends (RingPlan::ring); false for chains.
Builder StartPlan(const OpDesc& op, int nranks, const MoverEnv& env, bool ring) {
  Builder b;
  b.plan.ring = ring;
  b.plan.prev = Mod(env.rank - 1, nranks);
  b.plan.next = Mod(env.rank + 1, nranks);
  b.plan.type_size = DataTypeSize(op.type);
  b.plan.reduction = op.reduction;
  return b;
}

absl::Status AllReduce(const OpDesc& op, int n, MoverEnv& env) {
  const size_t ts = DataTypeSize(op.type), se = env.slot_bytes / ts;
  auto* sb = static_cast<const char*>(op.sendbuff);
  auto* rb = static_cast<char*>(op.recvbuff);
  const int r = env.rank;
  const bool contribute = NeedsContribute(op.reduction), finish = NeedsFinish(op.reduction);
  Builder b = StartPlan(op, n, env, /*ring=*/true);
  size_t slices = SlicesOf(ChunkOf(op.count, n, 0).elems, se);
  for (size_t j = 0; j < slices; ++j) {
    for (int s = 0; s <= 2 * n - 3; ++s) {
      Span so = SliceOf(ChunkOf(op.count, n, Mod(r - s, n)), se, j);
      if (so.elems > 0) {
        if (s == 0) b.Out(so.elems, sb + so.offset * ts, contribute);
        else b.Forward(so.elems);
      }
      Span si = SliceOf(ChunkOf(op.count, n, Mod(r - s - 1, n)), se, j);
      if (si.elems == 0) continue;
      if (s < n - 2) b.In(si.elems, nullptr, sb + si.offset * ts, false);
      else if (s == n - 2) b.In(si.elems, rb + si.offset * ts, sb + si.offset * ts, finish);
      else b.In(si.elems, rb + si.offset * ts, nullptr, false);
    }
  }
  return RunRing(b.plan, env);
}

absl::Status ReduceScatter(const OpDesc& op, int n, MoverEnv& env) {
  const size_t ts = DataTypeSize(op.type), se = env.slot_bytes / ts, m = op.count;
  auto* sb = static_cast<const char*>(op.sendbuff);
  auto* rb = static_cast<char*>(op.recvbuff);
  const int r = env.rank;
  Builder b = StartPlan(op, n, env, /*ring=*/true);
  for (size_t j = 0, slices = SlicesOf(m, se); j < slices; ++j) {
    Span sl = SliceOf(Span{0, m}, se, j);
    for (int s = 0; s <= n - 2; ++s) {
      if (s == 0) b.Out(sl.elems, sb + (Mod(r - 1, n) * m + sl.offset) * ts, NeedsContribute(op.reduction));
      else b.Forward(sl.elems);
      if (s < n - 2) b.In(sl.elems, nullptr, sb + (Mod(r - s - 2, n) * m + sl.offset) * ts, false);
      else b.In(sl.elems, rb + sl.offset * ts, sb + (r * m + sl.offset) * ts, NeedsFinish(op.reduction));
    }
  }
  return RunRing(b.plan, env);
}

absl::Status AllGather(const OpDesc& op, int n, MoverEnv& env) {
  const size_t ts = DataTypeSize(op.type), se = env.slot_bytes / ts, m = op.count;
  auto* rb = static_cast<char*>(op.recvbuff);
  const int r = env.rank;
  char* own = rb + r * m * ts;
  if (own != op.sendbuff) std::memmove(own, op.sendbuff, m * ts);
  Builder b = StartPlan(op, n, env, /*ring=*/true);
  for (size_t j = 0, slices = SlicesOf(m, se); j < slices; ++j) {
    Span sl = SliceOf(Span{0, m}, se, j);
    for (int s = 0; s <= n - 2; ++s) {
      if (s == 0) b.Out(sl.elems, own + sl.offset * ts, false);
      else b.Forward(sl.elems);
      b.In(sl.elems, rb + (Mod(r - s - 1, n) * m + sl.offset) * ts, nullptr, false);
    }
  }
  return RunRing(b.plan, env);
}

absl::Status Broadcast(const OpDesc& op, int n, MoverEnv& env) {
  const size_t ts = DataTypeSize(op.type), se = env.slot_bytes / ts;
  const int p = Mod(env.rank - op.root, n);
  auto* sb = static_cast<const char*>(op.sendbuff);
  auto* rb = static_cast<char*>(op.recvbuff);
  if (p == 0 && sb != rb) std::memmove(rb, sb, op.count * ts);
  Builder b = StartPlan(op, n, env, /*ring=*/false);
  for (size_t j = 0, slices = SlicesOf(op.count, se); j < slices; ++j) {
    Span sl = SliceOf(Span{0, op.count}, se, j);
    if (p == 0) {
      b.Out(sl.elems, rb + sl.offset * ts, false);
      continue;
    }
    b.In(sl.elems, rb + sl.offset * ts, nullptr, false);
    if (p < n - 1) b.Forward(sl.elems);
  }
  return RunRing(b.plan, env);
}

absl::Status Reduce(const OpDesc& op, int n, MoverEnv& env) {
  const size_t ts = DataTypeSize(op.type), se = env.slot_bytes / ts;
  const int p = Mod(env.rank - op.root - 1, n);
  auto* sb = static_cast<const char*>(op.sendbuff);
  auto* rb = static_cast<char*>(op.recvbuff);
  Builder b = StartPlan(op, n, env, /*ring=*/false);
  for (size_t j = 0, slices = SlicesOf(op.count, se); j < slices; ++j) {
    Span sl = SliceOf(Span{0, op.count}, se, j);
    const char* local = sb + sl.offset * ts;
    if (p == 0) {
      b.Out(sl.elems, local, NeedsContribute(op.reduction));
    } else if (p < n - 1) {
      b.In(sl.elems, nullptr, local, false);
      b.Forward(sl.elems);
    } else {
      b.In(sl.elems, rb + sl.offset * ts, local, NeedsFinish(op.reduction));
    }
  }
  return RunRing(b.plan, env);
}

absl::Status AlltoAll(const OpDesc& op, int n, MoverEnv& env) {
  const size_t ts = DataTypeSize(op.type), bytes = op.count * ts;
  auto* sb = const_cast<char*>(static_cast<const char*>(op.sendbuff));
  auto* rb = static_cast<char*>(op.recvbuff);
  std::vector<P2pTransfer> xs;
  if (sb != rb) {
    for (int p = 0; p < n; ++p) {
      xs.push_back(P2pTransfer{p, true, sb + p * bytes, bytes});
      xs.push_back(P2pTransfer{p, false, rb + p * bytes, bytes});
    }
    return RunP2p(xs, env);
  }
  // In place: copy one piece per peer into the send pool, then exchange.
  size_t piece = (env.depth * env.slot_bytes / n) / ts * ts;
  char* pool = env.staging + env.depth * env.slot_bytes;
  for (size_t off = 0; off < bytes; off += piece) {
    size_t len = std::min(piece, bytes - off);
    xs.clear();
    for (int p = 0; p < n; ++p) {
      std::memcpy(pool + p * piece, sb + p * bytes + off, len);
      xs.push_back(P2pTransfer{p, true, pool + p * piece, len});
      xs.push_back(P2pTransfer{p, false, rb + p * bytes + off, len});
    }
    TRIRACE_RETURN_IF_ERROR(RunP2p(xs, env));
  }
  return absl::OkStatus();
}

absl::Status GatherScatter(const OpDesc& op, int n, MoverEnv& env, bool gather) {
  const size_t bytes = op.count * DataTypeSize(op.type);
  auto* sb = const_cast<char*>(static_cast<const char*>(op.sendbuff));
  auto* rb = static_cast<char*>(op.recvbuff);
  std::vector<P2pTransfer> xs;
  if (env.rank == op.root) {
    for (int p = 0; p < n; ++p) {
      if (gather) {
        xs.push_back(P2pTransfer{p, false, rb + p * bytes, bytes});
      } else {
        xs.push_back(P2pTransfer{p, true, sb + p * bytes, bytes});
      }
    }
    if (gather) xs.push_back(P2pTransfer{op.root, true, sb, bytes});
    else xs.push_back(P2pTransfer{op.root, false, rb, bytes});
  } else if (gather) {
    xs.push_back(P2pTransfer{op.root, true, sb, bytes});
  } else {
    xs.push_back(P2pTransfer{op.root, false, rb, bytes});
  }
  return RunP2p(xs, env);
}

// A single rank: the result is its own contribution.
void RunAlone(const OpDesc& op) {
  const size_t bytes = op.count * DataTypeSize(op.type);
  switch (op.func) {
    case NcclFunc::kAllReduce:
    case NcclFunc::kReduce:
    case NcclFunc::kReduceScatter:
      Contribute(op.reduction, op.recvbuff, op.sendbuff, op.count);
      Finish(op.reduction, op.recvbuff, op.count);
      return;
    default:
      if (op.recvbuff != op.sendbuff) std::memmove(op.recvbuff, op.sendbuff, bytes);
  }
}

}  // namespace

absl::Status RunCollective(const OpDesc& given, int nranks, MoverEnv& env) {
  OpDesc op = given;
  if (op.device_scalar != nullptr) op.reduction = PreMulSumReduction(op.type, op.device_scalar);
  if (op.count == 0) return absl::OkStatus();
  if (nranks == 1) {
    RunAlone(op);
    return absl::OkStatus();
  }
  const size_t ts = DataTypeSize(op.type);
  const size_t n = static_cast<size_t>(nranks);
  // The buffers this rank touches, registered for the operation.
  size_t send_elems = op.count, recv_elems = op.count;
  if (op.func == NcclFunc::kAllGather) recv_elems *= n;
  if (op.func == NcclFunc::kReduceScatter || op.func == NcclFunc::kAlltoAll) send_elems *= n;
  if (op.func == NcclFunc::kAlltoAll) recv_elems *= n;
  bool root = env.rank == op.root;
  bool uses_send = !(op.func == NcclFunc::kBroadcast && !root) && op.func != NcclFunc::kScatter;
  bool uses_recv = !(op.func == NcclFunc::kReduce && !root) && op.func != NcclFunc::kGather;
  env.regions.clear();
  if (uses_send) TRIRACE_RETURN_IF_ERROR(env.AddRegion(op.sendbuff, send_elems * ts));
  if (uses_recv) TRIRACE_RETURN_IF_ERROR(env.AddRegion(op.recvbuff, recv_elems * ts));
  env.links->SetTransferFunc(op.func);
  absl::Status s;
  switch (op.func) {
    case NcclFunc::kAllReduce: s = AllReduce(op, nranks, env); break;
    case NcclFunc::kReduceScatter: s = ReduceScatter(op, nranks, env); break;
    case NcclFunc::kAllGather: s = AllGather(op, nranks, env); break;
    case NcclFunc::kBcast:
    case NcclFunc::kBroadcast: s = Broadcast(op, nranks, env); break;
    case NcclFunc::kReduce: s = Reduce(op, nranks, env); break;
    case NcclFunc::kAlltoAll: s = AlltoAll(op, nranks, env); break;
    case NcclFunc::kGather: s = GatherScatter(op, nranks, env, true); break;
    case NcclFunc::kScatter: s = GatherScatter(op, nranks, env, false); break;
    default: s = InternalError("Send/Recv run as a collective");
  }
  env.regions.clear();
  return s;
}

P2pTransfer TransferOf(const OpDesc& op) {
  bool send = op.func == NcclFunc::kSend;
  char* data = send ? const_cast<char*>(static_cast<const char*>(op.sendbuff)) : static_cast<char*>(op.recvbuff);
  return P2pTransfer{op.root, send, data, op.count * DataTypeSize(op.type)};
}

}  // namespace trirace::hostccl
