#include "interpose/comm_state.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace trirace::interpose {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t Fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

template <typename T>
uint64_t FnvValue(uint64_t h, T v) {
  return Fnv(h, &v, sizeof(v));
}

// 0 means "no parent" in the registry: never hand it out as an id.
uint64_t NonZero(uint64_t h) { return h == 0 ? 1 : h; }

uint64_t Load(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

}  // namespace

absl::string_view OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kP2P: return "P2P";
    case OpClass::kSparse: return "SPARSE";
    case OpClass::kDense: return "DENSE";
    case OpClass::kOther: return "OTHER";
  }
  return "?";
}

absl::string_view RoleName(int role) {
  switch (role) {
    case TRIRACE_ROLE_DATA_PARALLEL: return "data-parallel";
    case TRIRACE_ROLE_PIPELINE: return "pipeline";
    case TRIRACE_ROLE_TENSOR: return "tensor";
    case TRIRACE_ROLE_EXPERT: return "expert";
    default: return "unknown";
  }
}

int InferRole(const OpStats& s) {
  auto ops = [&](Func f) { return Load(s.ops[static_cast<int>(f)]); };
  uint64_t total = 0;
  for (const auto& n : s.ops) total += Load(n);
  if (total == 0) return TRIRACE_ROLE_UNKNOWN;
  const uint64_t p2p = ops(Func::kSend) + ops(Func::kRecv);
  if (p2p == total) return TRIRACE_ROLE_PIPELINE;
  const uint64_t sparse = ops(Func::kAllGather) + ops(Func::kAlltoAll);
  const uint64_t dense = ops(Func::kAllReduce) + ops(Func::kReduceScatter);
  if (sparse > 0 && sparse >= dense) return TRIRACE_ROLE_EXPERT;
  if (dense > 0 && Load(s.max_dense_bytes) >= kLargeDenseBytes) return TRIRACE_ROLE_DATA_PARALLEL;
  return TRIRACE_ROLE_UNKNOWN;
}

int EffectiveRole(const CommState& state, bool* annotated) {
  const int a = state.annotated_role.load(std::memory_order_relaxed);
  if (annotated != nullptr) *annotated = a >= 0;
  return a >= 0 ? a : InferRole(state.stats);
}

OpClass ClassifyOp(Func func, int role, int tag_class) {
  if (tag_class >= TRIRACE_CLASS_P2P && tag_class <= TRIRACE_CLASS_DENSE) return static_cast<OpClass>(tag_class);
  switch (role) {
    case TRIRACE_ROLE_PIPELINE: return OpClass::kP2P;
    case TRIRACE_ROLE_EXPERT: return OpClass::kSparse;
    case TRIRACE_ROLE_DATA_PARALLEL: return OpClass::kDense;
    default: break;
  }
  switch (func) {
    case Func::kSend:
    case Func::kRecv:
      return OpClass::kP2P;
    case Func::kAllGather:
    case Func::kAlltoAll:
      return OpClass::kSparse;
    case Func::kAllReduce:
    case Func::kReduceScatter:
      return OpClass::kDense;
    default:
      return OpClass::kOther;
  }
}

void CountOp(OpStats& s, Func func, OpClass op_class, size_t bytes) {
  const int f = static_cast<int>(func);
  const int c = static_cast<int>(op_class);
  s.ops[f].fetch_add(1, std::memory_order_relaxed);
  s.bytes[f].fetch_add(bytes, std::memory_order_relaxed);
  s.class_ops[c].fetch_add(1, std::memory_order_relaxed);
  s.class_bytes[c].fetch_add(bytes, std::memory_order_relaxed);
  if ((func == Func::kAllReduce || func == Func::kReduceScatter) && bytes > Load(s.max_dense_bytes)) {
    // One thread issues on a comm at a time (an NCCL rule), so load+store is enough.
    s.max_dense_bytes.store(bytes, std::memory_order_relaxed);
  }
}

uint64_t CommIdFromUniqueIds(const ncclUniqueId* ids, int n) {
  uint64_t h = kFnvOffset;
  for (int i = 0; i < n; ++i) h = Fnv(h, ids[i].internal, sizeof(ids[i].internal));
  return NonZero(h);
}

uint64_t CommIdForSplit(uint64_t parent_id, uint64_t split_index, int color) {
  uint64_t h = FnvValue(kFnvOffset, parent_id);
  h = FnvValue(h, split_index);
  h = FnvValue(h, static_cast<int64_t>(color));
  return NonZero(h);
}

uint64_t CommIdForShrink(uint64_t parent_id, uint64_t split_index, const int* excluded, int n_excluded) {
  uint64_t h = FnvValue(kFnvOffset, parent_id ^ 0x5348524e4bull);  // distinct from splits
  h = FnvValue(h, split_index);
  for (int i = 0; excluded != nullptr && i < n_excluded; ++i) h = FnvValue(h, excluded[i]);
  return NonZero(h);
}

uint64_t CommIdForInitAll(int pid, uint64_t sequence) {
  uint64_t h = FnvValue(kFnvOffset, static_cast<int64_t>(pid));
  h = FnvValue(h, sequence ^ 0x414c4cull);
  return NonZero(h);
}

std::string CommIdHex(uint64_t id) { return absl::StrFormat("%016x", id); }

}  // namespace trirace::interpose
