#include "scheduler/chunk_planner.h"

#include <algorithm>

namespace trirace::sched {

bool IsChunkable(NcclFunc f) {
  return f == NcclFunc::kAllReduce || f == NcclFunc::kReduce || f == NcclFunc::kBroadcast || f == NcclFunc::kBcast;
}

bool SplitKeepsEveryBit(NcclFunc f, ReduceKind op, bool integer_elements, int nranks) {
  switch (f) {
    case NcclFunc::kBroadcast:
    case NcclFunc::kBcast:
      return true;
    case NcclFunc::kAllReduce:
    case NcclFunc::kReduce:
    case NcclFunc::kReduceScatter:
      break;
    default:
      return false;
  }
  switch (op) {
    case ReduceKind::kMinMax: return true;
    case ReduceKind::kSum:
    case ReduceKind::kProd:
    case ReduceKind::kAvg: return nranks == 2 || integer_elements;
    case ReduceKind::kNone:
    case ReduceKind::kOther: return false;
  }
  return false;
}

ChunkPlan PlanChunks(NcclFunc func, uint64_t count, size_t dtype_size, uint64_t chunk_bytes) {
  const uint64_t elem = dtype_size == 0 ? 1 : dtype_size;
  ChunkPlan plan;
  // count * elem without overflow: compare against chunk_bytes / elem.
  const bool small = chunk_bytes == 0 || count <= chunk_bytes / elem;
  if (!IsChunkable(func) || small) {
    plan.chunks.push_back({0, count});
    return plan;
  }
  const uint64_t granule = (kChunkGranuleBytes % elem == 0) ? kChunkGranuleBytes / elem : 1;
  uint64_t len = std::max<uint64_t>(chunk_bytes / elem / granule, 1) * granule;
  const uint64_t max_chunks = kMaxChunksPerOp;
  if ((count + len - 1) / len > max_chunks) {
    const uint64_t min_len = (count + max_chunks - 1) / max_chunks;
    len = (min_len + granule - 1) / granule * granule;
  }
  plan.chunks.reserve((count + len - 1) / len);
  for (uint64_t off = 0; off < count; off += len) {
    plan.chunks.push_back({off, std::min(len, count - off)});
  }
  return plan;
}

uint64_t CommChunkBytes(uint64_t fixed_bytes, int64_t chunk_ns, uint64_t min_bytes, int hosts,
                        double slowest_nic_bytes_per_s, bool every_rank_class_priority) {
  if (fixed_bytes > 0) return fixed_bytes;
  if (chunk_ns <= 0) return 0;
  if (hosts > 1 && every_rank_class_priority) return 0;  // the wire lets P2P pass DENSE
  if (hosts <= 1 || slowest_nic_bytes_per_s <= 0) return kUnagreedChunkBytes;
  const double wire = static_cast<double>(chunk_ns) * slowest_nic_bytes_per_s / 1e9;
  const uint64_t bytes = std::max<uint64_t>(min_bytes, static_cast<uint64_t>(wire));
  return std::max<uint64_t>(kChunkGranuleBytes, bytes / kChunkGranuleBytes * kChunkGranuleBytes);
}

}  // namespace trirace::sched
