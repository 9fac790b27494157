// The request handles the net plugin hands NCCL: one 64-bit value that names
// the comm (its table index and generation), the request slot and the
// slot's sequence number, so a handle of a finished request or a closed comm
// is recognised as stale instead of touching freed memory.
//
//   bit 63       marker (set in every request handle; comm handles lack it)
//   bits 40..62  comm generation, low 23 bits
//   bits 24..39  the slot's sequence number (16 bits)
//   bits 17..23  request slot (7 bits; NCCL_NET_MAX_REQUESTS is 32)
//   bits 0..16   comm table index + 1 (17 bits; 0 never names a comm)
//
// Thread safety: pure functions.
#ifndef TRIRACE_PLUGIN_CORE_REQUEST_HANDLE_H_
#define TRIRACE_PLUGIN_CORE_REQUEST_HANDLE_H_

#include <cstdint>
#include <optional>

namespace trirace::net {

struct RequestHandleFields {
  uint32_t comm_index = 0;  // the comm's HandleTable index
  uint32_t generation = 0;  // low kRequestGenerationBits of the comm's generation
  uint16_t seq = 0;
  int slot = 0;
};

inline constexpr uint64_t kRequestMarker = uint64_t{1} << 63;
inline constexpr int kRequestGenerationShift = 40;
inline constexpr int kRequestGenerationBits = 23;
inline constexpr uint32_t kRequestGenerationMask = (1u << kRequestGenerationBits) - 1;
inline constexpr int kRequestSeqShift = 24;
inline constexpr int kRequestSlotShift = 17;
inline constexpr uint64_t kRequestSlotMask = 0x7f;
inline constexpr uint64_t kRequestIndexMask = (uint64_t{1} << kRequestSlotShift) - 1;

inline uint64_t PackRequestHandle(const RequestHandleFields& f) {
  return kRequestMarker | (uint64_t{f.generation & kRequestGenerationMask} << kRequestGenerationShift) |
         (uint64_t{f.seq} << kRequestSeqShift) | (static_cast<uint64_t>(f.slot) << kRequestSlotShift) |
         ((uint64_t{f.comm_index} + 1) & kRequestIndexMask);
}

// nullopt for a value that is not a request handle (no marker, index 0).
inline std::optional<RequestHandleFields> UnpackRequestHandle(uint64_t h) {
  if ((h & kRequestMarker) == 0 || (h & kRequestIndexMask) == 0) return std::nullopt;
  RequestHandleFields f;
  f.comm_index = static_cast<uint32_t>(h & kRequestIndexMask) - 1;
  f.slot = static_cast<int>((h >> kRequestSlotShift) & kRequestSlotMask);
  f.seq = static_cast<uint16_t>(h >> kRequestSeqShift);
  f.generation = static_cast<uint32_t>(h >> kRequestGenerationShift) & kRequestGenerationMask;
  return f;
}

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_REQUEST_HANDLE_H_
