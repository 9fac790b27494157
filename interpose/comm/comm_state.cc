#include "interpose/comm/comm_state.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "common/hash.h"

namespace trirace::interpose {
namespace {

// 0 means "no parent" in the registry: never hand it out as an id.
uint64_t NonZero(uint64_t h) { return h == 0 ? 1 : h; }

uint64_t Load(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

}  // namespace

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
  auto ops = [&](NcclFunc f) { return Load(s.ops[static_cast<int>(f)]); };
  uint64_t total = 0;
  for (const auto& n : s.ops) total += Load(n);
  if (total == 0) return TRIRACE_ROLE_UNKNOWN;
  const uint64_t p2p = ops(NcclFunc::kSend) + ops(NcclFunc::kRecv);
  if (p2p == total) return TRIRACE_ROLE_PIPELINE;
  const uint64_t sparse = ops(NcclFunc::kAllGather) + ops(NcclFunc::kAlltoAll);
  const uint64_t dense = ops(NcclFunc::kAllReduce) + ops(NcclFunc::kReduceScatter);
  if (sparse > 0 && sparse >= dense) return TRIRACE_ROLE_EXPERT;
  if (dense > 0 && Load(s.max_dense_bytes) >= kLargeDenseBytes) return TRIRACE_ROLE_DATA_PARALLEL;
  return TRIRACE_ROLE_UNKNOWN;
}

int EffectiveRole(const CommState& state, bool* annotated) {
  const int a = state.annotated_role.load(std::memory_order_relaxed);
  if (annotated != nullptr) *annotated = a >= 0;
  return a >= 0 ? a : InferRole(state.stats);
}

TrafficClass ClassifyOp(NcclFunc func, int role, int tag_class) {
  if (std::optional<TrafficClass> annotated = TrafficClassFromAbi(tag_class)) return *annotated;
  switch (role) {
    case TRIRACE_ROLE_PIPELINE: return TrafficClass::kP2P;
    case TRIRACE_ROLE_EXPERT: return TrafficClass::kSparse;
    case TRIRACE_ROLE_DATA_PARALLEL: return TrafficClass::kDense;
    default: break;
  }
  switch (func) {
    case NcclFunc::kSend:
    case NcclFunc::kRecv:
      return TrafficClass::kP2P;
    case NcclFunc::kAllGather:
    case NcclFunc::kAlltoAll:
      return TrafficClass::kSparse;
    case NcclFunc::kAllReduce:
    case NcclFunc::kReduceScatter:
      return TrafficClass::kDense;
    default:
      return TrafficClass::kOther;
  }
}

void CountOp(OpStats& s, NcclFunc func, TrafficClass op_class, size_t bytes) {
  const int f = static_cast<int>(func);
  const int c = static_cast<int>(op_class);
  s.ops[f].fetch_add(1, std::memory_order_relaxed);
  s.bytes[f].fetch_add(bytes, std::memory_order_relaxed);
  s.class_ops[c].fetch_add(1, std::memory_order_relaxed);
  s.class_bytes[c].fetch_add(bytes, std::memory_order_relaxed);
  if ((func == NcclFunc::kAllReduce || func == NcclFunc::kReduceScatter) && bytes > Load(s.max_dense_bytes)) {
    // One thread issues on a comm at a time (an NCCL rule), so load+store is enough.
    s.max_dense_bytes.store(bytes, std::memory_order_relaxed);
  }
}

uint64_t CommIdFromUniqueIds(const ncclUniqueId* ids, int n) {
  uint64_t h = kFnv1a64Offset;
  for (int i = 0; i < n; ++i) h = Fnv1a64(ids[i].internal, sizeof(ids[i].internal), h);
  return NonZero(h);
}

uint64_t CommIdForSplit(uint64_t parent_id, uint64_t split_index, int color) {
  uint64_t h = Fnv1a64Value(parent_id);
  h = Fnv1a64Value(split_index, h);
  h = Fnv1a64Value(static_cast<int64_t>(color), h);
  return NonZero(h);
}

uint64_t CommIdForShrink(uint64_t parent_id, uint64_t split_index, const int* excluded, int n_excluded) {
  uint64_t h = Fnv1a64Value(parent_id ^ 0x5348524e4bull);  // distinct from splits
  h = Fnv1a64Value(split_index, h);
  for (int i = 0; excluded != nullptr && i < n_excluded; ++i) h = Fnv1a64Value(excluded[i], h);
  return NonZero(h);
}

uint64_t CommIdForInitAll(int pid, uint64_t sequence) {
  uint64_t h = Fnv1a64Value(static_cast<int64_t>(pid));
  h = Fnv1a64Value(sequence ^ 0x414c4cull, h);
  return NonZero(h);
}

std::string CommIdHex(uint64_t id) { return absl::StrFormat("%016x", id); }

}  // namespace trirace::interpose
