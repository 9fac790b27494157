#include "interpose/gate/chunk_agreement.h"

#include "absl/strings/str_cat.h"
#include "scheduler/chunk_planner.h"

namespace trirace::interpose {
namespace {

// What differs between rank r's settings and rank 0's, first variable
// first; empty when nothing does.
std::string Difference(int r, const topo::ChunkSettings& mine, const topo::ChunkSettings& first) {
  auto say = [r](const char* name, const auto& v, const auto& v0) {
    return absl::StrCat("rank ", r, " has ", name, "=", v, " where rank 0 has ", v0);
  };
  auto onoff = [](bool b) { return b ? "on" : "off"; };
  if (mine.fixed_bytes != first.fixed_bytes) return say("TRIRACE_CHUNK_BYTES", mine.fixed_bytes, first.fixed_bytes);
  if (mine.wire_us != first.wire_us) return say("TRIRACE_CHUNK_US", mine.wire_us, first.wire_us);
  if (mine.min_bytes != first.min_bytes) return say("TRIRACE_CHUNK_MIN_BYTES", mine.min_bytes, first.min_bytes);
  if (mine.float_reductions != first.float_reductions) {
    return say("TRIRACE_CHUNK_FLOAT_REDUCTIONS", onoff(mine.float_reductions), onoff(first.float_reductions));
  }
  return "";
}

}  // namespace

AgreedChunks AgreeChunks(std::span<const topo::PeerIdentity> ranks, int hosts) {
  AgreedChunks out;
  if (ranks.empty()) return out;
  out.settings = ranks[0].chunk;
  out.every_class_priority = true;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const topo::PeerIdentity& id = ranks[r];
    if (id.nic_gbps > 0 && (out.slowest_gbps == 0 || id.nic_gbps < out.slowest_gbps)) out.slowest_gbps = id.nic_gbps;
    out.every_class_priority = out.every_class_priority && id.class_priority;
    if (out.differs.empty()) out.differs = Difference(static_cast<int>(r), id.chunk, out.settings);
  }
  out.bytes = sched::CommChunkBytes(out.settings.fixed_bytes, int64_t{out.settings.wire_us} * 1000,
                                    out.settings.min_bytes, hosts, out.slowest_gbps * 1e9 / 8,
                                    out.every_class_priority);
  return out;
}

}  // namespace trirace::interpose
