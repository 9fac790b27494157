#include "topology/peer_identity.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/hash.h"

namespace trirace::topo {
namespace {

constexpr char kMagic[4] = {'T', 'R', 'P', 'I'};
constexpr uint16_t kVersion = 3;
constexpr size_t kHostOffset = 12, kHostSize = 64;
constexpr size_t kGpuOffset = 76, kGpuSize = 16;
constexpr size_t kFlagsOffset = 92;
constexpr uint32_t kClassPriorityFlag = 1, kFloatReductionsFlag = 2;
static_assert(kGpuOffset + kGpuSize == kFlagsOffset);
constexpr size_t kNicOffset = 96, kNicSize = 32;
constexpr size_t kChunkBytesOffset = 128, kChunkUsOffset = 136, kChunkMinOffset = 140;
constexpr uint64_t kMinBytesGranule = 4096;  // sched::kChunkGranuleBytes (topology does not link the scheduler)
static_assert(kFlagsOffset + 4 == kNicOffset);
static_assert(kNicOffset + kNicSize == kChunkBytesOffset);
static_assert(kChunkBytesOffset + 8 == kChunkUsOffset && kChunkUsOffset + 4 == kChunkMinOffset);
static_assert(kChunkMinOffset + 4 == kPeerIdentityBytes);

void PutLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

void PutString(uint8_t* p, size_t field, const std::string& s) {
  std::memset(p, 0, field);
  std::memcpy(p, s.data(), std::min(s.size(), field - 1));
}

bool GetString(const uint8_t* p, size_t field, std::string* out) {
  const auto* end = static_cast<const uint8_t*>(std::memchr(p, 0, field));
  if (end == nullptr) return false;
  out->assign(reinterpret_cast<const char*>(p), static_cast<size_t>(end - p));
  return true;
}

}  // namespace

std::string WireHostKey(const std::string& host) {
  if (host.size() < kHostSize) return host;
  return absl::StrCat(host.substr(0, 46), "#", absl::StrFormat("%016x", Fnv1a64Text(host)));
}

void EncodePeerIdentity(const PeerIdentity& id, std::span<uint8_t, kPeerIdentityBytes> out) {
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, sizeof(kMagic));
  PutLe(p + 4, kVersion, 2);
  PutLe(p + 6, static_cast<uint16_t>(static_cast<int16_t>(std::clamp(id.rail, -1, 32767))), 2);
  const double mbps = std::clamp(id.nic_gbps * 1000.0, 0.0, 4.0e9);
  PutLe(p + 8, static_cast<uint32_t>(mbps + 0.5), 4);
  PutString(p + kHostOffset, kHostSize, WireHostKey(id.host));
  PutString(p + kGpuOffset, kGpuSize, id.gpu_pci);
  PutString(p + kNicOffset, kNicSize, id.nic);
  PutLe(p + kFlagsOffset,
        (id.class_priority ? kClassPriorityFlag : 0) | (id.chunk.float_reductions ? kFloatReductionsFlag : 0), 4);
  PutLe(p + kChunkBytesOffset, id.chunk.fixed_bytes, 8);
  PutLe(p + kChunkUsOffset, id.chunk.wire_us, 4);
  PutLe(p + kChunkMinOffset, std::min<uint64_t>(id.chunk.min_bytes / kMinBytesGranule, UINT32_MAX), 4);
}

absl::StatusOr<PeerIdentity> DecodePeerIdentity(std::span<const uint8_t, kPeerIdentityBytes> in) {
  const uint8_t* p = in.data();
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("not a peer identity record (no TRPI magic)");
  }
  const uint64_t version = GetLe(p + 4, 2);
  if (version != kVersion) {
    return absl::InvalidArgumentError(absl::StrCat("peer identity record version ", version, ", expected ", kVersion));
  }
  PeerIdentity id;
  id.rail = static_cast<int16_t>(GetLe(p + 6, 2));
  id.nic_gbps = static_cast<double>(GetLe(p + 8, 4)) / 1000.0;
  const uint64_t flags = GetLe(p + kFlagsOffset, 4);
  id.class_priority = (flags & kClassPriorityFlag) != 0;
  id.chunk.float_reductions = (flags & kFloatReductionsFlag) != 0;
  id.chunk.fixed_bytes = GetLe(p + kChunkBytesOffset, 8);
  id.chunk.wire_us = static_cast<uint32_t>(GetLe(p + kChunkUsOffset, 4));
  id.chunk.min_bytes = GetLe(p + kChunkMinOffset, 4) * kMinBytesGranule;
  if (!GetString(p + kHostOffset, kHostSize, &id.host) || !GetString(p + kGpuOffset, kGpuSize, &id.gpu_pci) ||
      !GetString(p + kNicOffset, kNicSize, &id.nic)) {
    return absl::InvalidArgumentError("peer identity record with an unterminated string");
  }
  if (id.host.empty()) return absl::InvalidArgumentError("peer identity record without a host key");
  return id;
}

}  // namespace trirace::topo
